// Command pulumi-language-nodejs is the Node.js language host that the Pulumi CLI starts to run a
// Node.js program.
//
// Why it lives here: upstream's host (sdk/nodejs/cmd/pulumi-language-nodejs in pulumi/pulumi) is
// an untagged Go module, and the module proxy this project can reach serves none of its
// pseudo-versions (see README, "Toolchain"). This host speaks the LanguageRuntime gRPC protocol
// from the pinned sdk/v3 and runs the same entry point, @pulumi/pulumi's cmd/run, with the same
// flags and environment; dependencies are installed and listed with the SDK's own nodejs/npm
// package. What it does not implement (new, convert, policy packs, packages) answers
// Unimplemented; README "Toolchain" lists both.
//
// The files: main.go (process, health check), run.go (Run, Cancel), deps.go (install, about,
// dependencies, prompts), plugins.go (required plugins and packages).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"google.golang.org/grpc"
	pbempty "google.golang.org/protobuf/types/known/emptypb"

	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// version is set with -ldflags "-X main.version=..." to the CLI version it was built with.
var version = "3.274.1"

// healthInterval is how often the host asks the engine whether it is still there. Upstream asks
// every 5 minutes; a loopback gRPC call costs nothing, and a host (with its program) orphaned by a
// killed CLI should not hold a node lock or a dynamic provider for minutes.
const healthInterval = 10 * time.Second

type host struct {
	pulumirpc.UnimplementedLanguageRuntimeServer
	engineAddress string
	// cancelled ends the running programs: the engine's Cancel RPC, or the engine gone.
	cancelled context.Context
	cancel    context.CancelFunc
}

func main() {
	// The engine starts plugins with optional flags, then the engine's address.
	flags := flag.NewFlagSet("pulumi-language-nodejs", flag.ContinueOnError)
	showVersion := flags.Bool("version", false, "print the version and exit")
	// What the engine passes with --logflow, --tracing: accepted, not used by this host.
	flags.String("tracing", "", "a Zipkin-compatible tracing endpoint (not used)")
	flags.Bool("logtostderr", false, "log to stderr (not used)")
	flags.Int("v", 0, "log verbosity (not used)")
	runtime := flags.String("runtime", "nodejs", "the runtime: nodejs (bun is not supported here)")
	if err := flags.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if *showVersion {
		fmt.Println(version)
		return
	}
	if *runtime != "nodejs" {
		fail("unsupported runtime %q: this host runs nodejs only", *runtime)
	}
	engineAddress := flags.Arg(0)

	// Ctrl-C reaches the whole process group: stop serving cleanly instead of dying mid-RPC, and let
	// the engine's Cancel end the program.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	h := newHost(engineAddress)
	if engineAddress != "" {
		// The engine gone (a killed CLI) ends this host and its program.
		if err := rpcutil.Healthcheck(ctx, engineAddress, healthInterval, stop); err != nil {
			fail("could not start the health check of the engine at %s: %v", engineAddress, err)
		}
	}
	done := make(chan bool)
	go func() {
		<-ctx.Done()
		h.cancel()
		close(done)
	}()
	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Cancel: done,
		Init: func(srv *grpc.Server) error {
			pulumirpc.RegisterLanguageRuntimeServer(srv, h)
			return nil
		},
	})
	if err != nil {
		fail("could not start the gRPC server: %v", err)
	}
	fmt.Printf("%d\n", handle.Port)
	if err := <-handle.Done; err != nil {
		fail("%v", err)
	}
}

func newHost(engineAddress string) *host {
	ctx, cancel := context.WithCancel(context.Background())
	return &host{engineAddress: engineAddress, cancelled: ctx, cancel: cancel}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pulumi-language-nodejs: "+format+"\n", args...)
	os.Exit(1)
}

func (h *host) Handshake(_ context.Context, req *pulumirpc.LanguageHandshakeRequest) (*pulumirpc.LanguageHandshakeResponse, error) {
	h.engineAddress = req.GetEngineAddress()
	return &pulumirpc.LanguageHandshakeResponse{}, nil
}

func (h *host) GetPluginInfo(context.Context, *pbempty.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: version}, nil
}

// Cancel ends the running program (SIGINT, then SIGKILL after a grace period; see run.go).
func (h *host) Cancel(context.Context, *pbempty.Empty) (*pbempty.Empty, error) {
	h.cancel()
	return &pbempty.Empty{}, nil
}
