package standin

import (
	"maps"
	"slices"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

var rpcKinds = map[plugin.DiffKind]pulumirpc.PropertyDiff_Kind{
	plugin.DiffAdd:           pulumirpc.PropertyDiff_ADD,
	plugin.DiffAddReplace:    pulumirpc.PropertyDiff_ADD_REPLACE,
	plugin.DiffDelete:        pulumirpc.PropertyDiff_DELETE,
	plugin.DiffDeleteReplace: pulumirpc.PropertyDiff_DELETE_REPLACE,
	plugin.DiffUpdate:        pulumirpc.PropertyDiff_UPDATE,
	plugin.DiffUpdateReplace: pulumirpc.PropertyDiff_UPDATE_REPLACE,
}

// EngineKey reports keys that are the engine's, not the program's: the plugin version it adds to
// provider inputs and "__"-prefixed internal keys.
func EngineKey(key resource.PropertyKey) bool {
	return key == "version" || strings.HasPrefix(string(key), "__")
}

// Diff compares old and new inputs with a detailed diff, as pulumi-go-provider's default Diff
// does; a change anywhere under a top-level property in replaceOn replaces the resource.
func Diff(olds, news resource.PropertyMap, replaceOn ...resource.PropertyKey) *pulumirpc.DiffResponse {
	objectDiff := olds.Diff(news, EngineKey)
	response := &pulumirpc.DiffResponse{
		Changes:         pulumirpc.DiffResponse_DIFF_NONE,
		HasDetailedDiff: true,
		DetailedDiff:    map[string]*pulumirpc.PropertyDiff{},
	}
	if objectDiff.AnyChanges() {
		response.Changes = pulumirpc.DiffResponse_DIFF_SOME
	}
	diffs, replaces := map[string]bool{}, map[string]bool{}
	for path, change := range plugin.NewDetailedDiffFromObjectDiff(objectDiff, false) {
		top := topLevelKey(path)
		for _, key := range replaceOn {
			if top == string(key) {
				change.Kind = change.Kind.AsReplace()
			}
		}
		response.DetailedDiff[path] = &pulumirpc.PropertyDiff{Kind: rpcKinds[change.Kind], InputDiff: change.InputDiff}
		diffs[top] = true
		replaces[top] = replaces[top] || change.Kind.IsReplace()
	}
	for _, key := range slices.Sorted(maps.Keys(diffs)) {
		response.Diffs = append(response.Diffs, key)
		if replaces[key] {
			response.Replaces = append(response.Replaces, key)
		}
	}
	return response
}

func topLevelKey(path string) string {
	parsed, err := resource.ParsePropertyPath(path)
	if err != nil || len(parsed) == 0 {
		return path
	}
	if key, ok := parsed[0].(string); ok {
		return key
	}
	return path
}
