// Command pulumi-resource-command is a STAND-IN for the Pulumi Command provider, not the real one.
//
// kai-gpu-fractions' tests need it because the real provider cannot be built from the Go module
// proxy and the Python language host refuses a program whose virtualenv has pulumi-command 1.2.1
// without its plugin. It reports version 1.2.1 so the engine accepts it for that SDK, and every
// error and log line it emits starts with "[stand-in pulumi-resource-command, not the real provider]".
//
// What it mirrors, learned by reading (no code copied) pulumi/pulumi-command at tag v1.2.1
// (7f3eb6f3b77cd0fa3895ba437a695dd393f7dd25): provider/cmd/pulumi-resource-command/schema.json,
// provider/pkg/provider/common/inputs.go, provider/pkg/provider/local/{base.go, command.go,
// commandController.go, commandOutputs.go, logging.go}, and the rules of the framework it is
// built on, pulumi/pulumi-go-provider v1.3.0 infer/resource.go (Check, Diff, Create, Update,
// Delete and how secrets and unknowns flow to outputs):
//   - command:local:Command with the real input and output names and types; the outputs are the
//     inputs plus stdout and stderr; the ID is the resource name plus 8 random hex digits.
//   - Scripts run with /bin/sh -c (or `interpreter`) in `dir` (default: the plugin's working
//     directory), with the plugin's environment plus `environment`, and `stdin`.
//   - create runs on create; a change of `triggers` replaces the resource (create the new one,
//     then delete the old one, unless the program asks for delete-before-replace); any other
//     change updates it and runs `update`, or `create` when `update` is unset; `delete` runs on
//     delete. update and delete get the previous stdout and stderr as PULUMI_COMMAND_STDOUT and
//     PULUMI_COMMAND_STDERR unless addPreviousOutputInEnv is false.
//   - stdout and stderr lose one trailing newline; each output line is logged as an info status
//     unless `logging` says otherwise; a failing script fails the step with
//     "<exit error>: running <script>:" followed by its interleaved stdout and stderr.
//   - Preview runs nothing: stdout and stderr are unknown.
//   - Secrets are accepted: secret inputs are stored as secrets, and so are the outputs that
//     mirror them; stdout and stderr are secret only if the program says so.
//
// Left out: command:remote:*, the command:local:run invoke, assetPaths and archivePaths (Check
// accepts them; running a command that sets them fails), the Windows default interpreter, and
// customTimeouts (ignored).
package main

import (
	"fmt"
	"os"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/provider"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

func main() {
	err := provider.Main("command", func(host *provider.HostClient) (pulumirpc.ResourceProviderServer, error) {
		return newCommandProvider(host), nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, stand.Errorf("%v", err))
		os.Exit(1)
	}
}
