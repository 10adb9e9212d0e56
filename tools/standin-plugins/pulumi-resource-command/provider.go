package main

import (
	"context"
	_ "embed"
	"errors"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/provider"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"

	"kai-gpu-fractions/tools/standin-plugins/internal/standin"
)

const (
	version     = "1.2.1"
	commandType = "command:local:Command"
)

var stand = standin.Plugin("pulumi-resource-command")

//go:embed schema.json
var schema string

type commandProvider struct {
	pulumirpc.UnimplementedResourceProviderServer
	host *provider.HostClient // nil in unit tests
	// canceled is done once the engine calls Cancel; running scripts are then killed.
	canceled context.Context
	cancel   context.CancelFunc
}

func newCommandProvider(host *provider.HostClient) *commandProvider {
	canceled, cancel := context.WithCancel(context.Background())
	return &commandProvider{host: host, canceled: canceled, cancel: cancel}
}

func (p *commandProvider) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: version}, nil
}

func (p *commandProvider) GetSchema(context.Context, *pulumirpc.GetSchemaRequest) (*pulumirpc.GetSchemaResponse, error) {
	return &pulumirpc.GetSchemaResponse{Schema: schema}, nil
}

// The real provider has no configuration and takes any.
func (p *commandProvider) CheckConfig(_ context.Context, req *pulumirpc.CheckRequest) (*pulumirpc.CheckResponse, error) {
	return &pulumirpc.CheckResponse{Inputs: req.GetNews()}, nil
}

func (p *commandProvider) DiffConfig(_ context.Context, req *pulumirpc.DiffRequest) (*pulumirpc.DiffResponse, error) {
	olds, news, err := oldAndNew(req.GetOldInputs(), req.GetNews())
	if err != nil {
		return nil, err
	}
	return standin.Diff(olds, news), nil
}

func (p *commandProvider) Configure(context.Context, *pulumirpc.ConfigureRequest) (*pulumirpc.ConfigureResponse, error) {
	return &pulumirpc.ConfigureResponse{AcceptSecrets: true, SupportsPreview: true}, nil
}

func (p *commandProvider) Cancel(context.Context, *emptypb.Empty) (*emptypb.Empty, error) {
	p.cancel()
	return &emptypb.Empty{}, nil
}

func (p *commandProvider) Check(_ context.Context, req *pulumirpc.CheckRequest) (*pulumirpc.CheckResponse, error) {
	if err := checkType(req.GetUrn()); err != nil {
		return nil, err
	}
	news, err := stand.Properties(req.GetNews())
	if err != nil {
		return nil, err
	}
	_, failures := decode(news)
	return &pulumirpc.CheckResponse{Inputs: req.GetNews(), Failures: failures}, nil
}

func (p *commandProvider) Diff(_ context.Context, req *pulumirpc.DiffRequest) (*pulumirpc.DiffResponse, error) {
	// The engine has already applied ignoreChanges to the new inputs.
	olds, news, err := oldAndNew(req.GetOldInputs(), req.GetNews())
	if err != nil {
		return nil, err
	}
	return standin.Diff(olds, news, "triggers"), nil
}

func (p *commandProvider) Create(ctx context.Context, req *pulumirpc.CreateRequest) (*pulumirpc.CreateResponse, error) {
	urn := resource.URN(req.GetUrn())
	inputs, c, err := decodeProperties(req.GetProperties())
	if err != nil {
		return nil, err
	}
	id, err := resource.NewUniqueHex(urn.Name(), 8, 0)
	if err != nil {
		return nil, stand.Errorf("%w", err)
	}
	var out result
	script, ok := c.script("create")
	if ok && !req.GetPreview() {
		if err := c.implemented(); err != nil {
			return nil, err
		}
		if out, err = p.runCancellable(ctx, urn, script, c, result{}); err != nil {
			return nil, err
		}
	}
	properties, err := outputs(inputs, out, req.GetPreview())
	return &pulumirpc.CreateResponse{Id: id, Properties: properties}, err
}

func (p *commandProvider) Read(_ context.Context, req *pulumirpc.ReadRequest) (*pulumirpc.ReadResponse, error) {
	return &pulumirpc.ReadResponse{Id: req.GetId(), Properties: req.GetProperties(), Inputs: req.GetInputs()}, nil
}

func (p *commandProvider) Update(ctx context.Context, req *pulumirpc.UpdateRequest) (*pulumirpc.UpdateResponse, error) {
	urn := resource.URN(req.GetUrn())
	inputs, c, err := decodeProperties(req.GetNews())
	if err != nil {
		return nil, err
	}
	state, err := stand.Properties(req.GetOlds())
	if err != nil {
		return nil, err
	}
	previous := previousResult(state)
	out := previous
	script, ok := c.script("update")
	if !ok {
		script, ok = c.script("create")
	}
	if ok && !req.GetPreview() {
		if err := c.implemented(); err != nil {
			return nil, err
		}
		if out, err = p.runCancellable(ctx, urn, script, c, previous); err != nil {
			return nil, err
		}
	}
	properties, err := outputs(inputs, out, req.GetPreview())
	return &pulumirpc.UpdateResponse{Properties: properties}, err
}

func (p *commandProvider) Delete(ctx context.Context, req *pulumirpc.DeleteRequest) (*emptypb.Empty, error) {
	urn := resource.URN(req.GetUrn())
	state, c, err := decodeProperties(req.GetProperties())
	if err != nil {
		return nil, err
	}
	if script, ok := c.script("delete"); ok {
		if _, err := p.runCancellable(ctx, urn, script, c, previousResult(state)); err != nil {
			return nil, err
		}
	}
	return &emptypb.Empty{}, nil
}

// decodeProperties decodes a Command's properties: its inputs, or its state, which holds them.
func decodeProperties(s *structpb.Struct) (resource.PropertyMap, command, error) {
	properties, err := stand.Properties(s)
	if err != nil {
		return nil, command{}, err
	}
	inputs := resource.PropertyMap{}
	for _, key := range inputKeys {
		if v, ok := properties[key]; ok {
			inputs[key] = v
		}
	}
	c, failures := decode(inputs)
	if len(failures) > 0 {
		return nil, c, errors.New(failures[0].GetReason())
	}
	return properties, c, nil
}

// runCancellable runs a script until it ends, the request ends or the engine cancels.
func (p *commandProvider) runCancellable(ctx context.Context, urn resource.URN, script string, c command,
	previous result,
) (result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(p.canceled, cancel)()
	return p.run(ctx, urn, script, c, previous)
}

// outputs are the inputs plus stdout and stderr, which are unknown in a preview.
func outputs(inputs resource.PropertyMap, out result, preview bool) (*structpb.Struct, error) {
	properties := inputs.Copy()
	properties["stdout"] = resource.NewStringProperty(out.stdout)
	properties["stderr"] = resource.NewStringProperty(out.stderr)
	if preview {
		properties["stdout"] = resource.MakeComputed(resource.NewStringProperty(""))
		properties["stderr"] = resource.MakeComputed(resource.NewStringProperty(""))
	}
	return stand.Struct(properties)
}

func previousResult(state resource.PropertyMap) result {
	text := func(key resource.PropertyKey) string {
		if v := standin.Reveal(state[key]); v.IsString() {
			return v.StringValue()
		}
		return ""
	}
	return result{text("stdout"), text("stderr")}
}

func oldAndNew(olds, news *structpb.Struct) (resource.PropertyMap, resource.PropertyMap, error) {
	oldProperties, err := stand.Properties(olds)
	if err != nil {
		return nil, nil, err
	}
	newProperties, err := stand.Properties(news)
	return oldProperties, newProperties, err
}

func checkType(urn string) error {
	if t := resource.URN(urn).Type(); t != commandType {
		return stand.Errorf("unknown resource type %s: the stand-in implements only %s", t, commandType)
	}
	return nil
}
