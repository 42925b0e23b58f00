package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/google/shlex"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// bailExitCode is what @pulumi/pulumi's run script exits with after it reported the error itself.
const bailExitCode = 32

// cancelGrace is how long a cancelled program has to end after SIGINT before it is killed.
const cancelGrace = 5 * time.Second

// Run starts `node [nodeargs] @pulumi/pulumi/cmd/run ... <entry>` for the program and waits for it.
func (h *host) Run(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	info := req.GetInfo()
	programDir := info.GetProgramDirectory()
	if programDir == "" {
		programDir = req.GetPwd()
	}
	if req.GetAttachDebugger() {
		return &pulumirpc.RunResponse{Error: "--attach-debugger is not supported by sm121's Node.js language host (see README, Toolchain)"}, nil
	}
	runScript, err := resolveRunScript(programDir)
	if err != nil {
		return &pulumirpc.RunResponse{Error: err.Error()}, nil
	}
	opts, err := parseOptions(info.GetOptions().AsMap())
	if err != nil {
		return &pulumirpc.RunResponse{Error: err.Error()}, nil
	}
	// nodeargs are shell words, as upstream reads them: --max-old-space-size=8192 "--title=a b".
	nodeArgs, err := shlex.Split(opts.nodeargs)
	if err != nil {
		return &pulumirpc.RunResponse{Error: fmt.Sprintf("runtime option nodeargs: %v", err)}, nil
	}
	args := append(nodeArgs, runArgs(req, runScript, h.engineAddress)...)
	env, err := runEnv(req, opts)
	if err != nil {
		return nil, err
	}

	// The program ends when the engine cancels (Cancel, or the engine gone) or the request ends.
	cmdCtx, cmdCancel := context.WithCancel(h.cancelled)
	defer cmdCancel()
	stopAfter := context.AfterFunc(ctx, cmdCancel)
	defer stopAfter()
	cmd := exec.CommandContext(cmdCtx, "node", args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = cancelGrace
	cmd.Dir = req.GetPwd()
	cmd.Env = env
	// Through pipes, never the host's own descriptors: node may set them non-blocking, and the
	// host's next write to its stdout would then fail (upstream does the same).
	cmd.Stdout = struct{ io.Writer }{os.Stdout}
	cmd.Stderr = struct{ io.Writer }{os.Stderr}
	err = cmd.Run()
	// node may exit with writes still buffered in the pipes' copy: flush before answering.
	_ = os.Stdout.Sync()
	_ = os.Stderr.Sync()
	if err == nil {
		return &pulumirpc.RunResponse{}, nil
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if exit.ExitCode() == bailExitCode {
			return &pulumirpc.RunResponse{Bail: true}, nil
		}
		if cmdCtx.Err() != nil {
			return &pulumirpc.RunResponse{Error: "the program was cancelled"}, nil
		}
		return &pulumirpc.RunResponse{Error: fmt.Sprintf("Program exited with non-zero exit code: %d", exit.ExitCode())}, nil
	}
	return &pulumirpc.RunResponse{Error: fmt.Sprintf("could not run node: %v", err)}, nil
}

// runArgs are @pulumi/pulumi's cmd/run flags, as the engine's request gives them.
func runArgs(req *pulumirpc.RunRequest, runScript, engineAddress string) []string {
	info := req.GetInfo()
	entry := info.GetEntryPoint()
	if entry == "" {
		entry = req.GetProgram()
	}
	if entry == "" {
		entry = "."
	}
	args := []string{runScript,
		"--monitor", req.GetMonitorAddress(),
		"--engine", engineAddress,
		"--project", req.GetProject(),
		"--stack", req.GetStack(),
		"--pwd", req.GetPwd(),
		"--parallel", strconv.Itoa(int(req.GetParallel()))}
	if org := req.GetOrganization(); org != "" {
		args = append(args, "--organization", org)
	}
	if root := info.GetRootDirectory(); root != "" {
		args = append(args, "--root-directory", root)
	}
	if req.GetDryRun() {
		args = append(args, "--dry-run")
	}
	args = append(args, entry)
	return append(args, req.GetArgs()...)
}

func runEnv(req *pulumirpc.RunRequest, opts options) ([]string, error) {
	// Empty maps and lists must be sent as {} and [], not null: the SDK calls Object.keys on them.
	cfg := req.GetConfig()
	if cfg == nil {
		cfg = map[string]string{}
	}
	keys := req.GetConfigSecretKeys()
	if keys == nil {
		keys = []string{}
	}
	config, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	secretKeys, err := json.Marshal(keys)
	if err != nil {
		return nil, err
	}
	env := append(os.Environ(), "PULUMI_CONFIG="+string(config), "PULUMI_CONFIG_SECRET_KEYS="+string(secretKeys))
	env = append(env, "PULUMI_NODEJS_TYPESCRIPT="+strconv.FormatBool(opts.typescript))
	if opts.tsconfig != "" {
		env = append(env, "PULUMI_NODEJS_TSCONFIG_PATH="+opts.tsconfig)
	}
	return env, nil
}

// resolveRunScript finds @pulumi/pulumi/cmd/run the way Node resolves it from the program: the
// node_modules of the program directory, then of each parent. Only when none has it (NODE_PATH,
// a global folder) is node asked, which costs a process on every run.
func resolveRunScript(programDir string) (string, error) {
	for dir := programDir; ; dir = filepath.Dir(dir) {
		script := filepath.Join(dir, "node_modules", "@pulumi", "pulumi", "cmd", "run", "index.js")
		if _, err := os.Stat(script); err == nil {
			return script, nil
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	cmd := exec.Command("node", "-e", "process.stdout.write(require.resolve('@pulumi/pulumi/cmd/run'))")
	cmd.Dir = programDir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("could not find @pulumi/pulumi from %s (run `pulumi install` or `npm ci` there first): %w", programDir, err)
	}
	return string(out), nil
}
