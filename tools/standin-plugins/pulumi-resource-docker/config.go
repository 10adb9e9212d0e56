package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"

	"kai-gpu-fractions/tools/standin-plugins/internal/standin"
)

// configKeys are the real provider's configuration keys. Only registryAuth matters to
// getRegistryImage; the others configure the Docker daemon connection.
var configKeys = []resource.PropertyKey{
	"caMaterial", "certMaterial", "certPath", "context", "disableDockerDaemonCheck", "host", "keyMaterial",
	"registryAuth", "sshOpts",
}

// dockerHubHosts are the names upstream treats as Docker Hub.
var dockerHubHosts = []string{"registry-1.docker.io", "index.docker.io", "docker.io", "registry.hub.docker.com"}

// registryAuth is one registryAuth entry. The Python SDK sends the list as a JSON string.
type registryAuth struct {
	Address           string  `json:"address"`
	Username          *string `json:"username"`
	Password          *string `json:"password"`
	ConfigFile        *string `json:"configFile"`
	ConfigFileContent *string `json:"configFileContent"`
	AuthDisabled      bool    `json:"authDisabled"`
}

// credentials are what upstream keeps for one registry host.
type credentials struct {
	serverAddress      string // https://<host>, or http://<host> when the address said so
	username, password string
}

// checkConfig reports unknown keys and malformed registryAuth entries.
func checkConfig(news resource.PropertyMap) []string {
	var problems []string
	for _, key := range news.StableKeys() {
		switch {
		case standin.EngineKey(key):
		case !slices.Contains(configKeys, key):
			problems = append(problems, fmt.Sprintf("unrecognized configuration key %s", key))
		case key == "registryAuth" && !news[key].ContainsUnknowns():
			if _, err := registryAuthEntries(news[key]); err != nil {
				problems = append(problems, err.Error())
			}
		}
	}
	return problems
}

// registryAuthEntries decodes registryAuth, a JSON string or a list of objects.
func registryAuthEntries(v resource.PropertyValue) ([]registryAuth, error) {
	v = standin.Reveal(v)
	if v.IsNull() {
		return nil, nil
	}
	var data []byte
	if v.IsString() {
		data = []byte(v.StringValue())
	} else {
		var err error
		if data, err = json.Marshal(v.Mappable()); err != nil {
			return nil, err
		}
	}
	decoder := json.NewDecoder(bytes.NewReader(data))
	decoder.DisallowUnknownFields()
	var entries []registryAuth
	if err := decoder.Decode(&entries); err != nil {
		return nil, fmt.Errorf("registryAuth is not a list of registry credentials: %w", err)
	}
	for i, entry := range entries {
		if entry.Address == "" {
			return nil, fmt.Errorf("registryAuth[%d].address must be set", i)
		}
	}
	return entries, nil
}

// authConfigs resolves each entry's credentials as upstream's provider configuration does:
// username and password first, then configFileContent, then configFile.
func authConfigs(entries []registryAuth) (map[string]credentials, error) {
	configs := map[string]credentials{}
	for _, entry := range entries {
		server := canonicalAddress(entry.Address)
		host := hostOf(server)
		found := credentials{serverAddress: server}
		username, password := valueOr(entry.Username, os.Getenv("DOCKER_REGISTRY_USER")),
			valueOr(entry.Password, os.Getenv("DOCKER_REGISTRY_PASS"))
		if entry.AuthDisabled {
			username, password = "username", "password" // upstream's dummy credentials
		}
		var err error
		switch {
		case username != "":
			found.username, found.password = username, password
		case valueOr(entry.ConfigFileContent, "") != "":
			found.username, found.password, err = fromDockerConfig([]byte(*entry.ConfigFileContent), host)
		default:
			found.username, found.password, err = fromDockerConfigFile(valueOr(entry.ConfigFile, defaultConfigFile()), host)
		}
		if err != nil {
			return nil, stand.Errorf("registryAuth for %s: %w", host, err)
		}
		configs[host] = found
	}
	return configs, nil
}

func valueOr(v *string, fallback string) string {
	if v == nil {
		return fallback
	}
	return *v
}

func defaultConfigFile() string {
	if dir := os.Getenv("DOCKER_CONFIG"); dir != "" {
		if info, err := os.Stat(dir); err == nil && info.IsDir() {
			return filepath.Join(dir, "config.json")
		}
		return dir
	}
	return "~/.docker/config.json"
}

func fromDockerConfigFile(path, host string) (string, string, error) {
	if rest, ok := strings.CutPrefix(path, "~/"); ok {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", "", err
		}
		path = filepath.Join(home, rest)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", "", fmt.Errorf("could not open config file from filePath: %s. Error: %w", path, err)
	}
	return fromDockerConfig(data, host)
}

// fromDockerConfig reads a host's credentials from a docker config.json; a host it lacks has
// empty credentials, as with docker's own file store.
func fromDockerConfig(data []byte, host string) (string, string, error) {
	var config struct {
		Auths map[string]struct {
			Auth, Username, Password string
		} `json:"auths"`
		CredsStore  string            `json:"credsStore"`
		CredHelpers map[string]string `json:"credHelpers"`
	}
	if err := json.Unmarshal(data, &config); err != nil {
		return "", "", fmt.Errorf("error parsing docker registry config json: %w", err)
	}
	helper := config.CredHelpers[host]
	if helper == "" {
		helper = config.CredsStore
	}
	if helper != "" {
		return "", "", fmt.Errorf("credential helper %q is not implemented by the stand-in", helper)
	}
	keys := []string{host}
	if slices.Contains(dockerHubHosts, host) {
		keys = append([]string{"https://index.docker.io/v1/"}, dockerHubHosts...)
	}
	for _, key := range keys {
		if entry, ok := config.Auths[key]; ok {
			return decodeAuth(entry.Auth, entry.Username, entry.Password)
		}
	}
	for _, key := range sortedKeys(config.Auths) {
		if hostOf(key) == host {
			entry := config.Auths[key]
			return decodeAuth(entry.Auth, entry.Username, entry.Password)
		}
	}
	return "", "", nil
}

func decodeAuth(auth, username, password string) (string, string, error) {
	if auth == "" {
		return username, password, nil
	}
	decoded, err := base64.StdEncoding.DecodeString(auth)
	if err != nil {
		return "", "", fmt.Errorf("invalid auth in docker config: %w", err)
	}
	username, password, ok := strings.Cut(string(decoded), ":")
	if !ok {
		return "", "", fmt.Errorf("invalid auth in docker config: no colon")
	}
	return username, password, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for key := range m {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	return keys
}

// canonicalAddress is upstream's canonical registry address: https://<host>, unless the address
// explicitly says http://.
func canonicalAddress(address string) string {
	if strings.HasPrefix(address, "http://") {
		return "http://" + hostOf(address)
	}
	return "https://" + hostOf(address)
}

// hostOf strips a scheme and a path from a registry address.
func hostOf(address string) string {
	for _, scheme := range []string{"http://", "https://"} {
		if rest, ok := strings.CutPrefix(address, scheme); ok {
			address = rest
			break
		}
	}
	host, _, _ := strings.Cut(address, "/")
	return host
}

// credentialsFor returns the credentials for a registry host: an exact match, or, for Docker
// Hub, an entry under any of its names; otherwise anonymous HTTPS.
func credentialsFor(configs map[string]credentials, host string) credentials {
	if found, ok := configs[host]; ok {
		return found
	}
	if slices.Contains(dockerHubHosts, host) {
		for _, name := range dockerHubHosts {
			if found, ok := configs[name]; ok {
				return found
			}
		}
	}
	return credentials{serverAddress: "https://" + host}
}
