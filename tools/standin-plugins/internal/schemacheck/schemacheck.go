// Package schemacheck compares the schema a stand-in serves with a fragment of the real provider's
// schema, for the stand-ins' tests.
package schemacheck

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
)

type packageSpec struct {
	Meta   json.RawMessage `json:"meta"`
	Config struct {
		Variables map[string]json.RawMessage `json:"variables"`
	} `json:"config"`
	Provider  objectSpec            `json:"provider"`
	Resources map[string]objectSpec `json:"resources"`
	Functions map[string]struct {
		Inputs  objectSpec `json:"inputs"`
		Outputs objectSpec `json:"outputs"`
	} `json:"functions"`
	Types map[string]json.RawMessage `json:"types"`
}

type objectSpec struct {
	Properties      map[string]json.RawMessage `json:"properties"`
	InputProperties map[string]json.RawMessage `json:"inputProperties"`
	Required        []string                   `json:"required"`
	RequiredInputs  []string                   `json:"requiredInputs"`
}

// Compare returns one line per disagreement with the real schema: the stand-in's meta (how tokens
// map to modules) must be the real one; every config variable, provider, resource, function and
// type it declares must be in the real schema; each of its properties must have the real
// property's spec (descriptions aside); and its required lists must be the real ones restricted
// to the properties it declares.
func Compare(standinJSON, realJSON []byte) ([]string, error) {
	var standin, real packageSpec
	if err := json.Unmarshal(standinJSON, &standin); err != nil {
		return nil, fmt.Errorf("stand-in schema: %w", err)
	}
	if err := json.Unmarshal(realJSON, &real); err != nil {
		return nil, fmt.Errorf("real schema: %w", err)
	}
	var c comparison
	c.check(standin.Meta == nil || sameSpec(standin.Meta, real.Meta), "meta is %s, the real one is %s",
		standin.Meta, real.Meta)
	c.properties("config", standin.Config.Variables, real.Config.Variables)
	c.object("provider", standin.Provider, real.Provider)
	for token, spec := range standin.Resources {
		realSpec, ok := real.Resources[token]
		c.check(ok, "resource %s is not in the real schema", token)
		c.object(token, spec, realSpec)
	}
	for token, spec := range standin.Functions {
		realSpec, ok := real.Functions[token]
		c.check(ok, "function %s is not in the real schema", token)
		c.object(token+" inputs", spec.Inputs, realSpec.Inputs)
		c.object(token+" outputs", spec.Outputs, realSpec.Outputs)
	}
	for token, spec := range standin.Types {
		realSpec, ok := real.Types[token]
		c.check(ok, "type %s is not in the real schema", token)
		c.typeSpec(token, spec, realSpec)
	}
	return c.problems, nil
}

type comparison struct{ problems []string }

func (c *comparison) check(ok bool, format string, args ...any) {
	if !ok {
		c.problems = append(c.problems, fmt.Sprintf(format, args...))
	}
}

func (c *comparison) object(where string, standin, real objectSpec) {
	c.properties(where+" properties", standin.Properties, real.Properties)
	c.properties(where+" inputProperties", standin.InputProperties, real.InputProperties)
	c.required(where+" required", standin.Required, real.Required, standin.Properties)
	c.required(where+" requiredInputs", standin.RequiredInputs, real.RequiredInputs, standin.InputProperties)
}

func (c *comparison) properties(where string, standin, real map[string]json.RawMessage) {
	for name, spec := range standin {
		realSpec, ok := real[name]
		c.check(ok, "%s: %s is not in the real schema", where, name)
		if ok {
			c.check(sameSpec(spec, realSpec), "%s: %s is %s, the real one is %s", where, name,
				stripped(spec), stripped(realSpec))
		}
	}
}

// required checks that standin lists exactly the real required names among the declared ones.
func (c *comparison) required(where string, standin, real []string, declared map[string]json.RawMessage) {
	var want []string
	for _, name := range real {
		if _, ok := declared[name]; ok {
			want = append(want, name)
		}
	}
	got := slices.Clone(standin)
	sort.Strings(got)
	sort.Strings(want)
	c.check(slices.Equal(got, want), "%s: %v, the real schema requires %v of these", where, got, want)
}

// typeSpec compares an object type's properties like a resource's, and everything else (its kind,
// an enum's values) as a whole.
func (c *comparison) typeSpec(token string, standin, real json.RawMessage) {
	var standinObject, realObject objectSpec
	if json.Unmarshal(standin, &standinObject) != nil || json.Unmarshal(real, &realObject) != nil {
		c.check(false, "type %s is not an object", token)
		return
	}
	c.object(token, standinObject, realObject)
	rest := func(raw json.RawMessage) any {
		var spec map[string]any
		_ = json.Unmarshal(raw, &spec)
		for _, key := range []string{"properties", "required", "language"} {
			delete(spec, key)
		}
		return withoutDescriptions(spec)
	}
	c.check(reflect.DeepEqual(rest(standin), rest(real)), "type %s is %v, the real one is %v", token,
		rest(standin), rest(real))
}

func sameSpec(a, b json.RawMessage) bool {
	return reflect.DeepEqual(decoded(a), decoded(b))
}

func stripped(raw json.RawMessage) string {
	out, _ := json.Marshal(decoded(raw))
	return string(out)
}

func decoded(raw json.RawMessage) any {
	var v any
	_ = json.Unmarshal(raw, &v)
	return withoutDescriptions(v)
}

// withoutDescriptions drops documentation: descriptions, at any depth.
func withoutDescriptions(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, item := range v {
			if k != "description" {
				out[k] = withoutDescriptions(item)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, item := range v {
			out[i] = withoutDescriptions(item)
		}
		return out
	}
	return v
}
