package main

import (
	"slices"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"

	"kai-gpu-fractions/tools/standin-plugins/internal/standin"
)

// inputKeys are the real command:local:Command inputs; assetPaths and archivePaths are accepted
// but refused when a command runs (see leftOut).
var inputKeys = []resource.PropertyKey{
	"addPreviousOutputInEnv", "archivePaths", "assetPaths", "create", "delete", "dir", "environment",
	"interpreter", "logging", "stdin", "triggers", "update",
}

var loggingModes = []string{"stdout", "stderr", "stdoutAndStderr", "none"}

// command is a Command's decoded inputs.
type command struct {
	values      map[resource.PropertyKey]string // create, update, delete, dir, stdin and logging, when set
	environment map[string]string
	interpreter []string
	// addPreviousOutput is addPreviousOutputInEnv, which defaults to true.
	addPreviousOutput bool
	// leftOut names the inputs that are set and that the stand-in does not implement.
	leftOut []string
}

func (c command) script(key resource.PropertyKey) (string, bool) {
	s, ok := c.values[key]
	return s, ok
}

// implemented fails when inputs that would collect files after a create or update are set.
func (c command) implemented() error {
	if len(c.leftOut) > 0 {
		return stand.Errorf("%s not implemented by the stand-in", strings.Join(c.leftOut, " and "))
	}
	return nil
}

// logs reports whether lines of the stream ("stdout" or "stderr") are logged.
func (c command) logs(stream string) bool {
	mode, ok := c.values["logging"]
	return !ok || mode == stream || mode == "stdoutAndStderr"
}

// decode reads inputs as the real provider's Check does: unknown values are allowed (preview),
// nulls mean unset, and every other value must have the schema's type.
func decode(inputs resource.PropertyMap) (command, []*pulumirpc.CheckFailure) {
	c := command{values: map[resource.PropertyKey]string{}, addPreviousOutput: true}
	var failures []*pulumirpc.CheckFailure
	fail := func(key resource.PropertyKey, reason string) {
		failures = append(failures, &pulumirpc.CheckFailure{Property: string(key), Reason: stand.Label() + " " + reason})
	}
	for _, key := range inputs.StableKeys() {
		v := standin.Reveal(inputs[key])
		if !slices.Contains(inputKeys, key) {
			fail(key, "unrecognized field "+string(key))
			continue
		}
		if v.IsNull() || v.ContainsUnknowns() {
			continue
		}
		switch key {
		case "create", "update", "delete", "dir", "stdin", "logging":
			if !v.IsString() {
				fail(key, string(key)+" must be a string")
			} else if key == "logging" && !slices.Contains(loggingModes, v.StringValue()) {
				fail(key, "logging must be one of stdout, stderr, stdoutAndStderr, none")
			} else {
				c.values[key] = v.StringValue()
			}
		case "environment":
			if c.environment = stringMap(v); c.environment == nil {
				fail(key, "environment must be a map of strings")
			}
		case "interpreter", "assetPaths", "archivePaths":
			items, ok := stringList(v)
			if !ok {
				fail(key, string(key)+" must be a list of strings")
			} else if key == "interpreter" {
				c.interpreter = items
			} else if len(items) > 0 {
				c.leftOut = append(c.leftOut, string(key))
			}
		case "triggers":
			if !v.IsArray() {
				fail(key, "triggers must be a list")
			}
		case "addPreviousOutputInEnv":
			if !v.IsBool() {
				fail(key, "addPreviousOutputInEnv must be a boolean")
			} else {
				c.addPreviousOutput = v.BoolValue()
			}
		}
	}
	return c, failures
}

func stringMap(v resource.PropertyValue) map[string]string {
	if !v.IsObject() {
		return nil
	}
	m := map[string]string{}
	for key, item := range v.ObjectValue() {
		if !item.IsString() {
			return nil
		}
		m[string(key)] = item.StringValue()
	}
	return m
}

func stringList(v resource.PropertyValue) ([]string, bool) {
	if !v.IsArray() {
		return nil, false
	}
	var items []string
	for _, item := range v.ArrayValue() {
		if !item.IsString() {
			return nil, false
		}
		items = append(items, item.StringValue())
	}
	return items, true
}
