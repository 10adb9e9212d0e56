// Command pulumi-resource-docker is a STAND-IN for the Pulumi Docker provider, not the real one.
//
// kai-gpu-fractions' tests need it because the real provider cannot be built from the Go module
// proxy and the Python language host refuses a program whose virtualenv has pulumi-docker 5.2.0
// without its plugin. It reports version 5.2.0 so the engine accepts it for that SDK, and every
// error it returns starts with "[stand-in pulumi-resource-docker, not the real provider]".
//
// What it mirrors, learned by reading (no code copied):
//   - pulumi/pulumi-docker 237b7899bb513613a7645e74d6981c12d054dcc7 (the newest commit the
//     snapshot had; the schema of what follows is the same at tag v5.1.0):
//     provider/cmd/pulumi-resource-docker/schema.json, provider/resources.go, provider/hybrid.go
//     (Configure and Invoke go to the bridged Terraform provider), and
//     patches/0002-Do-not-create-empty-TLS-config-for-registry-HTTP-cli.patch.
//   - the bridged kreuzwerker/terraform-provider-docker v4.5.0
//     (5074970c71ce6cc393c74942d5d628943834beb9, pulumi-docker's upstream submodule):
//     internal/provider/data_source_docker_registry_image.go, authentication_helpers.go,
//     resource_docker_registry_image_funcs.go (getAuthConfigForRegistry), provider.go
//     (registry_auth, providerSetToRegistryAuth, Docker Hub names), config.go (address
//     normalisation), resource_docker_image_funcs.go (parseImageOptions).
//
// The provider configuration accepts every real key; registryAuth is implemented as upstream
// reads it: entries keyed by the address's host, username and password (defaults
// DOCKER_REGISTRY_USER and DOCKER_REGISTRY_PASS), else configFileContent, else configFile
// (default $DOCKER_CONFIG/config.json or ~/.docker/config.json), authDisabled meaning dummy
// credentials. The other keys only configure the Docker daemon connection, which
// getRegistryImage never uses, so they are accepted and ignored.
//
// The invoke docker:index/getRegistryImage:getRegistryImage asks the registry's distribution API
// over HTTPS (Go's default TLS settings, so SSL_CERT_FILE is honoured) with a HEAD of
// /v2/<repository>/manifests/<tag> accepting Docker schema 2 and OCI manifests and indexes, with
// basic auth when a registryAuth entry's host matches the image's registry, following a Bearer
// token challenge when the registry sends one. It returns the Docker-Content-Digest header (or,
// for a GET, the sha256 of the manifest body). When that fails it retries once asking for a
// schema 1 manifest, then reports the second error.
//
// Left out: every resource, every other invoke, credential helpers (credsStore, credHelpers) in
// docker config files, and the registry-specific credential handling for ghcr.io, gcr.io, ECR and
// ACR (they get plain basic auth here).
package main

import (
	"fmt"
	"os"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/provider"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

func main() {
	err := provider.Main("docker", func(*provider.HostClient) (pulumirpc.ResourceProviderServer, error) {
		return &dockerProvider{}, nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, stand.Errorf("%v", err))
		os.Exit(1)
	}
}
