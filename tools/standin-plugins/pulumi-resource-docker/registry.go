package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

// imageRef is an image name split as upstream's parseImageOptions splits it.
type imageRef struct{ registry, repository, tag string }

// parseImageName finds the registry (the first path component when the name has two or more
// slashes, or one and that component looks like a host), the tag or digest (default latest) and
// the repository, which for Docker Hub official images gets the library/ prefix.
func parseImageName(name string) imageRef {
	var ref imageRef
	first, _, hasSlash := strings.Cut(name, "/")
	if strings.Count(name, "/") > 1 || hasSlash && (strings.ContainsAny(first, ".:") || first == "localhost") {
		ref.registry = first
	}
	ref.repository = name
	if i := strings.Index(name[len(ref.registry):], ":"); i >= 0 {
		ref.repository = name[:len(ref.registry)+i]
		ref.tag = name[len(ref.registry)+i+1:]
		if _, digest, ok := strings.Cut(ref.tag, "@"); ok {
			ref.tag = digest
		}
	}
	if ref.tag == "" {
		ref.tag = "latest"
	}
	if ref.registry == "" {
		ref.registry = "registry-1.docker.io"
		if !strings.Contains(ref.repository, "/") {
			ref.repository = "library/" + ref.repository
		}
	} else {
		ref.repository = strings.Replace(ref.repository, ref.registry+"/", "", 1)
	}
	return ref
}

// Accept headers upstream sends for a manifest; the retry asks for schema 1 instead.
var (
	manifestTypes = []string{
		"application/vnd.docker.distribution.manifest.v2+json",
		"application/vnd.docker.distribution.manifest.list.v2+json",
		"application/vnd.oci.image.manifest.v1+json",
		"application/vnd.oci.image.index.v1+json",
	}
	schema1Types = []string{"application/vnd.docker.distribution.manifest.v1+prettyjws"}
)

// digest returns the digest the registry reports for the image's manifest. Like upstream it tries
// twice, the second time asking for schema 1, and reports the second error.
func digest(ctx context.Context, client *http.Client, ref imageRef, creds credentials) (string, error) {
	var err error
	for _, accept := range [][]string{manifestTypes, schema1Types} {
		var found string
		if found, err = manifestDigest(ctx, client, ref, creds, accept); err == nil {
			return found, nil
		}
	}
	return "", stand.Errorf("Got error when attempting to fetch image version %s:%s from registry %s: %w",
		ref.repository, ref.tag, ref.registry, err)
}

func manifestDigest(ctx context.Context, client *http.Client, ref imageRef, creds credentials, accept []string) (
	string, error,
) {
	manifest := creds.serverAddress + "/v2/" + ref.repository + "/manifests/" + ref.tag
	basic := func(r *http.Request) {
		if creds.username != "" {
			r.SetBasicAuth(creds.username, creds.password)
		}
	}
	first, err := send(ctx, client, http.MethodHead, manifest, accept, basic)
	if err != nil {
		return "", err
	}
	switch first.code {
	case http.StatusOK:
		return first.digest()
	case http.StatusUnauthorized:
		challenge, ok := bearerChallenge(first.header.Get("WWW-Authenticate"))
		if !ok {
			return "", fmt.Errorf("bad credentials: %s", first.status)
		}
		token, err := fetchToken(ctx, client, challenge, creds, "repository:"+ref.repository+":push,pull")
		if err != nil {
			return "", err
		}
		bearer := func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }
		// A HEAD first (registries rate-limit GETs); a GET when the HEAD carries no digest.
		for _, method := range []string{http.MethodHead, http.MethodGet} {
			reply, err := send(ctx, client, method, manifest, accept, bearer)
			if err != nil {
				return "", err
			}
			if reply.code != http.StatusOK {
				return "", fmt.Errorf("got bad response from registry: %s", reply.status)
			}
			if found, err := reply.digest(); err == nil || method == http.MethodGet {
				return found, err
			}
		}
	}
	return "", fmt.Errorf("got bad response from registry: %s", first.status)
}

type reply struct {
	code   int
	status string
	header http.Header
	body   []byte
}

// digest is the Docker-Content-Digest header, or else the sha256 of the body.
func (r reply) digest() (string, error) {
	if header := r.header.Get("Docker-Content-Digest"); header != "" {
		return header, nil
	}
	if len(r.body) == 0 {
		return "", errors.New("error reading registry response body: it is empty and there is no Docker-Content-Digest")
	}
	return fmt.Sprintf("sha256:%x", sha256.Sum256(r.body)), nil
}

func send(ctx context.Context, client *http.Client, method, target string, accept []string,
	authorize func(*http.Request),
) (reply, error) {
	req, err := http.NewRequestWithContext(ctx, method, target, nil)
	if err != nil {
		return reply{}, fmt.Errorf("error creating registry request: %w", err)
	}
	for _, mediaType := range accept {
		req.Header.Add("Accept", mediaType)
	}
	authorize(req)
	resp, err := client.Do(req)
	if err != nil {
		return reply{}, fmt.Errorf("error during registry request: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, fmt.Errorf("error reading registry response body: %w", err)
	}
	return reply{resp.StatusCode, resp.Status, resp.Header, body}, nil
}

var challengeParameter = regexp.MustCompile(`(\w+)=(?:"([^"]*)"|([^,\s]*))`)

// bearerChallenge parses a `Bearer realm="…",service="…",scope="…"` challenge.
func bearerChallenge(header string) (map[string]string, bool) {
	parameters, ok := strings.CutPrefix(header, "Bearer ")
	if !ok {
		return nil, false
	}
	challenge := map[string]string{}
	for _, match := range challengeParameter.FindAllStringSubmatch(parameters, -1) {
		challenge[match[1]] = match[2] + match[3]
	}
	return challenge, challenge["realm"] != ""
}

// fetchToken asks the challenge's realm for a token, with the credentials when there are any
// and anonymously when those are refused, as upstream does.
func fetchToken(ctx context.Context, client *http.Client, challenge map[string]string, creds credentials,
	fallbackScope string,
) (string, error) {
	query := url.Values{"service": {challenge["service"]}, "scope": {challenge["scope"]}}
	if challenge["scope"] == "" {
		query.Set("scope", fallbackScope)
	}
	realm := challenge["realm"] + "?" + query.Encode()
	withCredentials := func(r *http.Request) { r.SetBasicAuth(creds.username, creds.password) }
	anonymous := func(*http.Request) {}
	attempts := []func(*http.Request){anonymous}
	if creds.username != "" {
		attempts = []func(*http.Request){withCredentials, anonymous}
	}
	var answer reply
	for _, authorize := range attempts {
		var err error
		if answer, err = send(ctx, client, http.MethodGet, realm, []string{"application/json"}, authorize); err != nil {
			return "", err
		}
		if answer.code != http.StatusUnauthorized && answer.code != http.StatusForbidden {
			break
		}
	}
	if answer.code != http.StatusOK {
		return "", fmt.Errorf("got bad response from registry: %s", answer.status)
	}
	var token struct {
		Token       string `json:"token"`
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal(answer.body, &token); err != nil {
		return "", fmt.Errorf("error parsing OAuth token response: %w", err)
	}
	if token.Token != "" {
		return token.Token, nil
	}
	if token.AccessToken != "" {
		return token.AccessToken, nil
	}
	return "", errors.New("unsupported OAuth response: no token")
}
