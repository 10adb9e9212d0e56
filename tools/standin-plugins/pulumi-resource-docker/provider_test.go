package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"

	"kai-gpu-fractions/tools/standin-plugins/internal/schemacheck"
)

const (
	user     = "kgf"
	password = "correct-horse"
	manifest = `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json"}`
)

var manifestDigestValue = fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(manifest)))

// registry serves one manifest, kgf/app:v1, behind basic auth, or behind a Bearer token when
// tokens is set, as a distribution registry does.
type registry struct {
	tokens  bool
	accepts []string // the Accept headers of the last manifest request
}

func (r *registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path == "/token" {
		if u, p, _ := req.BasicAuth(); u != user || p != password {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_, _ = fmt.Fprint(w, `{"token":"t0ken"}`)
		return
	}
	authorized := false
	if r.tokens {
		authorized = req.Header.Get("Authorization") == "Bearer t0ken"
		w.Header().Set("WWW-Authenticate",
			fmt.Sprintf(`Bearer realm="https://%s/token",service="test-registry"`, req.Host))
	} else {
		u, p, _ := req.BasicAuth()
		authorized = u == user && p == password
		w.Header().Set("WWW-Authenticate", `Basic realm="test-registry"`)
	}
	if !authorized {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if req.URL.Path != "/v2/kgf/app/manifests/v1" {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	r.accepts = req.Header.Values("Accept")
	if !r.tokens { // the token flow reads the digest from a GET's body
		w.Header().Set("Docker-Content-Digest", manifestDigestValue)
	}
	if req.Method == http.MethodGet {
		_, _ = fmt.Fprint(w, manifest)
	}
}

// configured starts a TLS registry and a stand-in configured the way the Python SDK does it:
// registryAuth as a secret JSON string.
func configured(t *testing.T, r *registry, authPassword string) (*dockerProvider, string) {
	t.Helper()
	server := httptest.NewTLSServer(r)
	t.Cleanup(server.Close)
	host := strings.TrimPrefix(server.URL, "https://")
	p := &dockerProvider{client: server.Client()}
	auth := fmt.Sprintf(`[{"address":%q,"username":%q,"password":%q}]`, host, user, authPassword)
	args, err := stand.Struct(resource.PropertyMap{
		"registryAuth": resource.MakeSecret(resource.NewStringProperty(auth)),
		"version":      resource.NewStringProperty(version),
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Configure(context.Background(), &pulumirpc.ConfigureRequest{Args: args}); err != nil {
		t.Fatal(err)
	}
	return p, host
}

func invoke(t *testing.T, p *dockerProvider, name string) (resource.PropertyMap, error) {
	t.Helper()
	args, err := stand.Struct(resource.PropertyMap{"name": resource.NewStringProperty(name)})
	if err != nil {
		t.Fatal(err)
	}
	response, err := p.Invoke(context.Background(), &pulumirpc.InvokeRequest{Tok: getRegistryImage, Args: args})
	if err != nil {
		return nil, err
	}
	return stand.Properties(response.GetReturn())
}

func TestSchemaAgreesWithTheRealSchema(t *testing.T) {
	real, err := os.ReadFile("../testdata/docker-schema.json")
	if err != nil {
		t.Fatal(err)
	}
	problems, err := schemacheck.Compare([]byte(schema), real)
	if err != nil {
		t.Fatal(err)
	}
	for _, problem := range problems {
		t.Error(problem)
	}
}

func TestGetRegistryImageReturnsTheRegistrysDigest(t *testing.T) {
	r := &registry{}
	p, host := configured(t, r, password)
	result, err := invoke(t, p, host+"/kgf/app:v1")
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[resource.PropertyKey]string{
		"sha256Digest": manifestDigestValue, "id": manifestDigestValue, "name": host + "/kgf/app:v1",
	} {
		if got := result[key].StringValue(); got != want {
			t.Errorf("%s = %q, want %q", key, got, want)
		}
	}
	if result["insecureSkipVerify"].BoolValue() {
		t.Error("insecureSkipVerify should default to false")
	}
	if len(r.accepts) != len(manifestTypes) {
		t.Errorf("Accept %v, want %v", r.accepts, manifestTypes)
	}
}

func TestGetRegistryImageFollowsATokenChallenge(t *testing.T) {
	p, host := configured(t, &registry{tokens: true}, password)
	result, err := invoke(t, p, host+"/kgf/app:v1")
	if err != nil {
		t.Fatal(err)
	}
	if got := result["sha256Digest"].StringValue(); got != manifestDigestValue {
		t.Errorf("digest %q, want the sha256 of the manifest body %q", got, manifestDigestValue)
	}
}

func TestGetRegistryImageFailsClearlyForAMissingImage(t *testing.T) {
	p, host := configured(t, &registry{}, password)
	_, err := invoke(t, p, host+"/kgf/missing:v1")
	if err == nil {
		t.Fatal("a missing image was found")
	}
	for _, want := range []string{"[stand-in pulumi-resource-docker", "kgf/missing:v1", host, "404 Not Found"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestGetRegistryImageFailsClearlyForBadCredentials(t *testing.T) {
	p, host := configured(t, &registry{}, "wrong-password")
	_, err := invoke(t, p, host+"/kgf/app:v1")
	if err == nil {
		t.Fatal("wrong credentials were accepted")
	}
	if !strings.Contains(err.Error(), "bad credentials: 401 Unauthorized") || !strings.Contains(err.Error(), host) {
		t.Errorf("error %q should name the registry and the refused credentials", err)
	}
	if strings.Contains(err.Error(), "wrong-password") {
		t.Errorf("error %q shows the password", err)
	}
}

func TestParseImageName(t *testing.T) {
	for name, want := range map[string]imageRef{
		"127.0.0.1:5000/kgf/app:v1":   {"127.0.0.1:5000", "kgf/app", "v1"},
		"localhost/app":               {"localhost", "app", "latest"},
		"registry.example/a/b/c:2":    {"registry.example", "a/b/c", "2"},
		"alpine":                      {"registry-1.docker.io", "library/alpine", "latest"},
		"org/app:1.0":                 {"registry-1.docker.io", "org/app", "1.0"},
		"ghcr.io/org/app:1@sha256:ab": {"ghcr.io", "org/app", "sha256:ab"},
	} {
		if got := parseImageName(name); got != want {
			t.Errorf("parseImageName(%q) = %+v, want %+v", name, got, want)
		}
	}
}

func TestRegistryAuthIsMatchedByHost(t *testing.T) {
	dockerConfig := fmt.Sprintf(`{"auths":{"https://files.example:5000/v1/":{"auth":%q}}}`,
		base64.StdEncoding.EncodeToString([]byte("filer:filed")))
	content := func(s string) *string { return &s }
	configs, err := authConfigs([]registryAuth{
		{Address: "https://registry.example:5000/v2/", Username: content("u"), Password: content("p")},
		{Address: "http://plain.example", Username: content("u2"), Password: content("p2")},
		{Address: "files.example:5000", ConfigFileContent: content(dockerConfig)},
		{Address: "docker.io", Username: content("hub"), Password: content("hubpass")},
		{Address: "open.example", AuthDisabled: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]credentials{
		"registry.example:5000": {"https://registry.example:5000", "u", "p"},
		"plain.example":         {"http://plain.example", "u2", "p2"},
		"files.example:5000":    {"https://files.example:5000", "filer", "filed"},
		"registry-1.docker.io":  {"https://docker.io", "hub", "hubpass"},
		"open.example":          {"https://open.example", "username", "password"},
		"other.example":         {"https://other.example", "", ""},
	} {
		if got := credentialsFor(configs, host); got != want {
			t.Errorf("credentials for %s: %+v, want %+v", host, got, want)
		}
	}
}

func TestAMissingDockerConfigFileFailsConfiguration(t *testing.T) {
	missing := t.TempDir() + "/config.json"
	_, err := authConfigs([]registryAuth{{Address: "registry.example", ConfigFile: &missing}})
	if err == nil || !strings.Contains(err.Error(), "could not open config file from filePath: "+missing) {
		t.Errorf("error %v", err)
	}
}

func TestCheckConfigAcceptsTheRealKeysOnly(t *testing.T) {
	news, err := stand.Struct(resource.PropertyMap{
		"host":         resource.NewStringProperty("unix:///var/run/docker.sock"),
		"registryAuth": resource.NewStringProperty(`[{"username":"u"}]`),
		"hots":         resource.NewStringProperty("typo"),
		"version":      resource.NewStringProperty(version),
	})
	if err != nil {
		t.Fatal(err)
	}
	response, err := (&dockerProvider{}).CheckConfig(context.Background(), &pulumirpc.CheckRequest{News: news})
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, failure := range response.GetFailures() {
		reasons = append(reasons, failure.GetReason())
	}
	joined := strings.Join(reasons, "\n")
	if len(reasons) != 2 || !strings.Contains(joined, "unrecognized configuration key hots") ||
		!strings.Contains(joined, "registryAuth[0].address must be set") {
		t.Errorf("failures:\n%s", joined)
	}
}

func TestTokenRequestsCarryServiceAndScope(t *testing.T) {
	var query url.Values
	server := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		query = r.URL.Query()
		_, _ = fmt.Fprint(w, `{"access_token":"abc"}`)
	}))
	defer server.Close()
	token, err := fetchToken(context.Background(), server.Client(),
		map[string]string{"realm": server.URL + "/token", "service": "reg"}, credentials{}, "repository:kgf/app:push,pull")
	if err != nil || token != "abc" {
		t.Fatalf("token %q, %v", token, err)
	}
	if query.Get("service") != "reg" || query.Get("scope") != "repository:kgf/app:push,pull" {
		t.Errorf("token query %v", query)
	}
}
