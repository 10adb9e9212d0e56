package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"

	"github.com/pulumi/pulumi/sdk/v3/go/common/diag"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
)

// result is what a script printed, each stream without one trailing newline.
type result struct{ stdout, stderr string }

// run runs script with c's interpreter, directory, environment and stdin. previous is the result
// of the last create or update, which update and delete scripts see in their environment.
func (p *commandProvider) run(ctx context.Context, urn resource.URN, script string, c command, previous result) (
	result, error,
) {
	args := c.interpreter
	if len(args) == 0 {
		args = []string{"/bin/sh", "-c"}
	}
	cmd := exec.CommandContext(ctx, args[0], append(slices.Clone(args[1:]), script)...)
	cmd.Dir = c.values["dir"]
	cmd.Env = os.Environ()
	for _, name := range sortedKeys(c.environment) {
		cmd.Env = append(cmd.Env, name+"="+c.environment[name])
	}
	if c.addPreviousOutput {
		if previous.stdout != "" {
			cmd.Env = append(cmd.Env, "PULUMI_COMMAND_STDOUT="+previous.stdout)
		}
		if previous.stderr != "" {
			cmd.Env = append(cmd.Env, "PULUMI_COMMAND_STDERR="+previous.stderr)
		}
	}
	if stdin := c.values["stdin"]; stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}

	var stdout, stderr bytes.Buffer
	combined := &lockedBuffer{} // both streams as they came, for the error message
	stdoutLines, stderrLines := p.lineLogger(ctx, urn, c.logs("stdout")), p.lineLogger(ctx, urn, c.logs("stderr"))
	cmd.Stdout = io.MultiWriter(&stdout, combined, stdoutLines)
	cmd.Stderr = io.MultiWriter(&stderr, combined, stderrLines)
	err := cmd.Run()
	stdoutLines.flush()
	stderrLines.flush()
	if err != nil {
		return result{}, stand.Errorf("%w: running %q:\n%s", err, script, combined.String())
	}
	return result{strings.TrimSuffix(stdout.String(), "\n"), strings.TrimSuffix(stderr.String(), "\n")}, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for key := range m {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	return keys
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// lineWriter calls log with each complete line written to it, and with the rest on flush.
type lineWriter struct {
	log     func(line string)
	pending []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.pending = append(w.pending, p...)
	for {
		i := bytes.IndexByte(w.pending, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.log(string(w.pending[:i]))
		w.pending = w.pending[i+1:]
	}
}

func (w *lineWriter) flush() {
	if len(w.pending) > 0 {
		w.log(string(w.pending))
		w.pending = nil
	}
}

// lineLogger logs each line as an info status message of the resource, as the real provider
// does, when enabled and when there is an engine to log to.
func (p *commandProvider) lineLogger(ctx context.Context, urn resource.URN, enabled bool) *lineWriter {
	return &lineWriter{log: func(line string) {
		if enabled && p.host != nil {
			_ = p.host.LogStatus(ctx, diag.Info, urn, fmt.Sprintf("%s %s", stand.Label(), line))
		}
	}}
}
