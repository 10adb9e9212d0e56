package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/types/known/structpb"

	"kai-gpu-fractions/tools/standin-plugins/internal/schemacheck"
)

const urn = "urn:pulumi:test::project::command:local:Command::build"

func toStruct(t *testing.T, m resource.PropertyMap) *structpb.Struct {
	t.Helper()
	s, err := stand.Struct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func fromStruct(t *testing.T, s *structpb.Struct) resource.PropertyMap {
	t.Helper()
	m, err := stand.Properties(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func create(t *testing.T, inputs resource.PropertyMap, preview bool) (resource.PropertyMap, error) {
	t.Helper()
	response, err := newCommandProvider(nil).Create(context.Background(), &pulumirpc.CreateRequest{
		Urn: urn, Properties: toStruct(t, inputs), Preview: preview,
	})
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(response.GetId(), "build") || len(response.GetId()) != len("build")+8 {
		t.Errorf("id %q is not the name plus 8 hex digits", response.GetId())
	}
	return fromStruct(t, response.GetProperties()), nil
}

func TestSchemaAgreesWithTheRealSchema(t *testing.T) {
	real, err := os.ReadFile("../testdata/command-schema.json")
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

func TestSchemaDeclaresTheInputsItImplements(t *testing.T) {
	var spec struct {
		Resources map[string]struct {
			InputProperties map[string]any `json:"inputProperties"`
		} `json:"resources"`
	}
	if err := json.Unmarshal([]byte(schema), &spec); err != nil {
		t.Fatal(err)
	}
	var declared []resource.PropertyKey
	for name := range spec.Resources[commandType].InputProperties {
		declared = append(declared, resource.PropertyKey(name))
	}
	declared = append(declared, "assetPaths", "archivePaths") // accepted by Check, refused when run
	slices.Sort(declared)
	if !slices.Equal(declared, inputKeys) {
		t.Errorf("schema inputs plus the left-out ones %v, Check accepts %v", declared, inputKeys)
	}
}

func TestCreateRunsTheScriptWithItsEnvironmentAndDirectory(t *testing.T) {
	dir := t.TempDir()
	outputs, err := create(t, resource.PropertyMap{
		"create":      resource.NewStringProperty(`printf '%s in %s\n' "$GREETING" "$(pwd)"; echo warned >&2`),
		"dir":         resource.NewStringProperty(dir),
		"environment": resource.NewObjectProperty(resource.PropertyMap{"GREETING": resource.NewStringProperty("hello")}),
		"triggers":    resource.NewArrayProperty([]resource.PropertyValue{resource.NewStringProperty("v1")}),
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := outputs["stdout"].StringValue(), "hello in "+dir; got != want {
		t.Errorf("stdout %q, want %q (one trailing newline dropped)", got, want)
	}
	if got := outputs["stderr"].StringValue(); got != "warned" {
		t.Errorf("stderr %q", got)
	}
	if !outputs["triggers"].DeepEquals(resource.NewArrayProperty([]resource.PropertyValue{resource.NewStringProperty("v1")})) {
		t.Errorf("the outputs do not mirror the inputs: %v", outputs)
	}
}

func TestPreviewRunsNothingAndLeavesTheOutputsUnknown(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	outputs, err := create(t, resource.PropertyMap{"create": resource.NewStringProperty("touch " + marker)}, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the preview ran the create script")
	}
	if !outputs["stdout"].IsComputed() || !outputs["stderr"].IsComputed() {
		t.Errorf("stdout and stderr should be unknown in a preview: %v", outputs)
	}
}

func TestAFailingScriptFailsWithItsOutput(t *testing.T) {
	_, err := create(t, resource.PropertyMap{"create": resource.NewStringProperty("echo building; echo 'no space left' >&2; exit 3")}, false)
	if err == nil {
		t.Fatal("a failing create script succeeded")
	}
	for _, want := range []string{"[stand-in pulumi-resource-command", "exit status 3", "building", "no space left"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestSecretInputsStaySecretInTheOutputs(t *testing.T) {
	outputs, err := create(t, resource.PropertyMap{
		"create": resource.NewStringProperty(`test "$TOKEN" = s3cret && echo ok`),
		"environment": resource.NewObjectProperty(resource.PropertyMap{
			"TOKEN": resource.MakeSecret(resource.NewStringProperty("s3cret")),
		}),
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	if !outputs["environment"].ContainsSecrets() {
		t.Errorf("the secret environment value lost its secrecy: %v", outputs["environment"])
	}
	if outputs["stdout"].ContainsSecrets() || outputs["stdout"].StringValue() != "ok" {
		t.Errorf("stdout %v: plain unless the program makes it secret", outputs["stdout"])
	}
}

func diff(t *testing.T, olds, news resource.PropertyMap) *pulumirpc.DiffResponse {
	t.Helper()
	response, err := newCommandProvider(nil).Diff(context.Background(), &pulumirpc.DiffRequest{
		Urn: urn, OldInputs: toStruct(t, olds), Olds: toStruct(t, olds), News: toStruct(t, news),
	})
	if err != nil {
		t.Fatal(err)
	}
	return response
}

func TestTriggersReplaceAndOtherChangesUpdate(t *testing.T) {
	base := func(trigger, script string) resource.PropertyMap {
		return resource.PropertyMap{
			"create":   resource.NewStringProperty(script),
			"triggers": resource.NewArrayProperty([]resource.PropertyValue{resource.NewStringProperty(trigger)}),
		}
	}
	same := diff(t, base("a", "echo 1"), base("a", "echo 1"))
	if same.GetChanges() != pulumirpc.DiffResponse_DIFF_NONE {
		t.Errorf("no change reported as %v", same)
	}
	replaced := diff(t, base("a", "echo 1"), base("b", "echo 1"))
	if replaced.GetChanges() != pulumirpc.DiffResponse_DIFF_SOME || !slices.Equal(replaced.GetReplaces(), []string{"triggers"}) {
		t.Errorf("a trigger change should replace: %v", replaced)
	}
	added := diff(t, resource.PropertyMap{"create": resource.NewStringProperty("echo 1")}, base("a", "echo 1"))
	if !slices.Equal(added.GetReplaces(), []string{"triggers"}) {
		t.Errorf("adding triggers should replace: %v", added)
	}
	updated := diff(t, base("a", "echo 1"), base("a", "echo 2"))
	if len(updated.GetReplaces()) > 0 || !slices.Equal(updated.GetDiffs(), []string{"create"}) {
		t.Errorf("a script change should update in place: %v", updated)
	}
}

func update(t *testing.T, state, news resource.PropertyMap) resource.PropertyMap {
	t.Helper()
	response, err := newCommandProvider(nil).Update(context.Background(), &pulumirpc.UpdateRequest{
		Urn: urn, Id: "build12345678", Olds: toStruct(t, state), News: toStruct(t, news),
	})
	if err != nil {
		t.Fatal(err)
	}
	return fromStruct(t, response.GetProperties())
}

func TestUpdateRunsUpdateOrElseCreateWithThePreviousOutput(t *testing.T) {
	state := resource.PropertyMap{
		"create": resource.NewStringProperty("echo first"),
		"stdout": resource.NewStringProperty("first"),
		"stderr": resource.NewStringProperty(""),
	}
	withUpdate := update(t, state, resource.PropertyMap{
		"create": resource.NewStringProperty("echo created"),
		"update": resource.NewStringProperty(`echo "updated after $PULUMI_COMMAND_STDOUT"`),
	})
	if got := withUpdate["stdout"].StringValue(); got != "updated after first" {
		t.Errorf("update script: stdout %q", got)
	}
	withoutUpdate := update(t, state, resource.PropertyMap{"create": resource.NewStringProperty("echo created again")})
	if got := withoutUpdate["stdout"].StringValue(); got != "created again" {
		t.Errorf("no update script: stdout %q, want the create script's", got)
	}
}

func TestDeleteRunsTheDeleteScriptWithThePreviousOutput(t *testing.T) {
	record := filepath.Join(t.TempDir(), "deleted")
	_, err := newCommandProvider(nil).Delete(context.Background(), &pulumirpc.DeleteRequest{
		Urn: urn, Id: "build12345678", Properties: toStruct(t, resource.PropertyMap{
			"create":      resource.NewStringProperty("echo made"),
			"delete":      resource.NewStringProperty(`printf '%s' "$PULUMI_COMMAND_STDOUT" > "$RECORD"`),
			"environment": resource.NewObjectProperty(resource.PropertyMap{"RECORD": resource.NewStringProperty(record)}),
			"stdout":      resource.MakeSecret(resource.NewStringProperty("kubeconfig")),
			"stderr":      resource.NewStringProperty(""),
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(record); err != nil || string(got) != "kubeconfig" {
		t.Errorf("delete saw PULUMI_COMMAND_STDOUT=%q (%v)", got, err)
	}
}

func TestCheckReportsUnknownAndMistypedInputs(t *testing.T) {
	response, err := newCommandProvider(nil).Check(context.Background(), &pulumirpc.CheckRequest{
		Urn: urn, News: toStruct(t, resource.PropertyMap{
			"create":  resource.NewNumberProperty(1),
			"logging": resource.NewStringProperty("everything"),
			"command": resource.NewStringProperty("echo"),
			"dir":     resource.MakeComputed(resource.NewStringProperty("")),
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	var failed []string
	for _, failure := range response.GetFailures() {
		failed = append(failed, failure.GetProperty())
	}
	if !slices.Equal(failed, []string{"command", "create", "logging"}) {
		t.Errorf("failures %v", response.GetFailures())
	}
}

func TestInputsTheStandInLeavesOutAreRefusedWhenACommandRuns(t *testing.T) {
	inputs := resource.PropertyMap{
		"create":     resource.NewStringProperty("true"),
		"assetPaths": resource.NewArrayProperty([]resource.PropertyValue{resource.NewStringProperty("*.txt")}),
	}
	if _, err := create(t, inputs, true); err != nil {
		t.Errorf("a preview should pass: %v", err)
	}
	if _, err := create(t, inputs, false); err == nil || !strings.Contains(err.Error(), "assetPaths not implemented by the stand-in") {
		t.Errorf("create with assetPaths: %v", err)
	}
}
