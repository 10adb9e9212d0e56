package main

import (
	"context"
	"crypto/tls"
	_ "embed"
	"net/http"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/types/known/emptypb"

	"kai-gpu-fractions/tools/standin-plugins/internal/standin"
)

const (
	version          = "5.2.0"
	getRegistryImage = "docker:index/getRegistryImage:getRegistryImage"
)

var stand = standin.Plugin("pulumi-resource-docker")

//go:embed schema.json
var schema string

type dockerProvider struct {
	pulumirpc.UnimplementedResourceProviderServer
	auth map[string]credentials // by registry host, set by Configure
	// client is the HTTP client for registries that are verified; nil means Go's default one.
	// Tests set a client that trusts their test server.
	client *http.Client
}

func (p *dockerProvider) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: version}, nil
}

func (p *dockerProvider) GetSchema(context.Context, *pulumirpc.GetSchemaRequest) (*pulumirpc.GetSchemaResponse, error) {
	return &pulumirpc.GetSchemaResponse{Schema: schema}, nil
}

func (p *dockerProvider) CheckConfig(_ context.Context, req *pulumirpc.CheckRequest) (*pulumirpc.CheckResponse, error) {
	news, err := stand.Properties(req.GetNews())
	if err != nil {
		return nil, err
	}
	response := &pulumirpc.CheckResponse{Inputs: req.GetNews()}
	for _, problem := range checkConfig(news) {
		response.Failures = append(response.Failures, &pulumirpc.CheckFailure{Reason: stand.Label() + " " + problem})
	}
	return response, nil
}

func (p *dockerProvider) DiffConfig(_ context.Context, req *pulumirpc.DiffRequest) (*pulumirpc.DiffResponse, error) {
	olds, err := stand.Properties(req.GetOldInputs())
	if err != nil {
		return nil, err
	}
	news, err := stand.Properties(req.GetNews())
	if err != nil {
		return nil, err
	}
	return standin.Diff(olds, news), nil
}

func (p *dockerProvider) Configure(_ context.Context, req *pulumirpc.ConfigureRequest) (*pulumirpc.ConfigureResponse, error) {
	args, err := stand.Properties(req.GetArgs())
	if err != nil {
		return nil, err
	}
	entries, err := registryAuthEntries(args["registryAuth"])
	if err != nil {
		return nil, stand.Errorf("%w", err)
	}
	if p.auth, err = authConfigs(entries); err != nil {
		return nil, err
	}
	return &pulumirpc.ConfigureResponse{AcceptSecrets: true, SupportsPreview: true}, nil
}

func (p *dockerProvider) Invoke(ctx context.Context, req *pulumirpc.InvokeRequest) (*pulumirpc.InvokeResponse, error) {
	if req.GetTok() != getRegistryImage {
		return nil, stand.Errorf("unknown function %s: the stand-in implements only %s", req.GetTok(), getRegistryImage)
	}
	args, err := stand.Properties(req.GetArgs())
	if err != nil {
		return nil, err
	}
	name, insecure := standin.Reveal(args["name"]), standin.Reveal(args["insecureSkipVerify"])
	if !name.IsString() || name.StringValue() == "" {
		return &pulumirpc.InvokeResponse{Failures: []*pulumirpc.CheckFailure{
			{Property: "name", Reason: stand.Label() + " name (the image, with its tag) is required"},
		}}, nil
	}
	skipVerify := insecure.IsBool() && insecure.BoolValue()
	ref := parseImageName(name.StringValue())
	found, err := digest(ctx, p.httpClient(skipVerify), ref, credentialsFor(p.auth, ref.registry))
	if err != nil {
		return nil, err
	}
	result, err := stand.Struct(resource.PropertyMap{
		"id":                 resource.NewStringProperty(found),
		"name":               name,
		"sha256Digest":       resource.NewStringProperty(found),
		"insecureSkipVerify": resource.NewBoolProperty(skipVerify),
	})
	return &pulumirpc.InvokeResponse{Return: result}, err
}

// httpClient is Go's default client, as in pulumi-docker's patched upstream, unless TLS
// verification is off.
func (p *dockerProvider) httpClient(skipVerify bool) *http.Client {
	switch {
	case skipVerify:
		return &http.Client{Transport: &http.Transport{
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the program asked for it
			Proxy:           http.ProxyFromEnvironment,
		}}
	case p.client != nil:
		return p.client
	}
	return http.DefaultClient
}
