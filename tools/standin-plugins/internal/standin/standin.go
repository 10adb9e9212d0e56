// Package standin holds what both stand-in provider plugins share: their labelled errors and the
// conversion between gRPC structs and Pulumi property maps.
package standin

import (
	"fmt"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"google.golang.org/protobuf/types/known/structpb"
)

// Plugin names one stand-in; its Errorf labels every error so nobody mistakes it for the real provider.
type Plugin string

// Errorf returns an error whose message starts with the stand-in's label.
func (p Plugin) Errorf(format string, args ...any) error {
	return fmt.Errorf("%s: %w", p.Label(), fmt.Errorf(format, args...))
}

// Label is the prefix of every message the stand-in emits.
func (p Plugin) Label() string {
	return fmt.Sprintf("[stand-in %s, not the real provider]", string(p))
}

var marshalOptions = plugin.MarshalOptions{KeepUnknowns: true, KeepSecrets: true}

// Properties unmarshals a request's struct, keeping secrets and unknowns as the engine sent them.
func (p Plugin) Properties(s *structpb.Struct) (resource.PropertyMap, error) {
	m, err := plugin.UnmarshalProperties(s, marshalOptions)
	if err != nil {
		return nil, p.Errorf("%w", err)
	}
	return m, nil
}

// Struct marshals properties for a response, keeping secrets and unknowns.
func (p Plugin) Struct(m resource.PropertyMap) (*structpb.Struct, error) {
	s, err := plugin.MarshalProperties(m, marshalOptions)
	if err != nil {
		return nil, p.Errorf("%w", err)
	}
	return s, nil
}

// Reveal returns v with every secret wrapper removed, at any depth.
func Reveal(v resource.PropertyValue) resource.PropertyValue {
	switch {
	case v.IsSecret():
		return Reveal(v.SecretValue().Element)
	case v.IsArray():
		items := make([]resource.PropertyValue, len(v.ArrayValue()))
		for i, item := range v.ArrayValue() {
			items[i] = Reveal(item)
		}
		return resource.NewArrayProperty(items)
	case v.IsObject():
		object := resource.PropertyMap{}
		for k, item := range v.ObjectValue() {
			object[k] = Reveal(item)
		}
		return resource.NewObjectProperty(object)
	}
	return v
}
