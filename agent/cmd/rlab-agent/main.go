// Command rlab-agent is the program rlab ships to every lab host and starts
// over one SSH session. `rlab-agent serve` speaks the agent/proto protocol on
// stdin/stdout (its log goes to stderr) until stdin closes, then stops and
// undoes everything it started. `rlab-agent bundle` writes the work dir
// files named on its stdin as one tar stream (the controller's pull of many
// small files; see agent/proto's BundleCommand). `rlab-agent version` prints
// its version and its own sha256, the name it is installed under.
//
// It is pure Go (CGO_ENABLED=0) and must stay small: no cobra, no engine
// (internal/archtest checks it).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"unicode"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/server"
)

// version is set by the Makefile with -ldflags "-X main.version=...".
var version = "dev"

// testHooks adjusts the server options; only test builds (-tags
// rlabhostile, see hostile.go) set it.
var testHooks = func(*server.Options) error { return nil }

// checkExecutable is server.CheckRootExecutable; tests that run serve as
// root from a test binary in /tmp replace it.
var checkExecutable = server.CheckRootExecutable

// geteuid and getenv are os.Geteuid and os.Getenv; tests replace them to
// play a root agent started by sudo.
var (
	geteuid = os.Geteuid
	getenv  = os.Getenv
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

const usage = `usage:
  rlab-agent serve --run-id ID [--work-dir DIR] [--owner UID:GID] [--log-level debug|info|warn]
  rlab-agent bundle --work-dir DIR   (files named on stdin as JSON, a tar stream on stdout)
  rlab-agent version
`

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "version":
		h, err := server.SelfHash()
		if err != nil {
			fmt.Fprintln(stderr, "rlab-agent:", err)
			return 1
		}
		fmt.Fprintf(stdout, "rlab-agent %s proto %d sha256 %s\n", version, proto.Version, h)
		return 0
	case "serve":
		return serve(args[1:], stdin, stdout, stderr)
	case proto.BundleCommand:
		return bundle(args[1:], stdin, stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "rlab-agent: unknown command %q\n%s", args[0], usage)
		return 2
	}
}

func serve(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if err := checkRootArgs(args); err != nil {
		fmt.Fprintln(stderr, "rlab-agent serve:", err)
		return 2
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	runID := fs.String("run-id", "", "run id; names the default work dir")
	workDir := fs.String("work-dir", "", "work dir (default $HOME/.cache/rlab/runs/<run-id>)")
	owner := fs.String("owner", "", "UID:GID to own what the agent writes (when root on a user's behalf)")
	level := fs.String("log-level", "info", "log level: debug, info, warn, error")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "rlab-agent serve: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if err := checkRuleArgs(args, fs); err != nil {
		fmt.Fprintln(stderr, "rlab-agent serve:", err)
		return 2
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		fmt.Fprintf(stderr, "rlab-agent serve: --log-level %q: %v\n", *level, err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lv}))
	if err := server.ValidRunID(*runID); err != nil {
		fmt.Fprintln(stderr, "rlab-agent serve: --run-id:", err)
		return 2
	}
	opts := server.Options{WorkDir: *workDir, Version: version, Logger: log}
	if opts.WorkDir == "" {
		d, err := server.DefaultWorkDir(*runID)
		if err != nil {
			fmt.Fprintln(stderr, "rlab-agent serve:", err)
			return 1
		}
		opts.WorkDir = d
	}
	if *owner != "" {
		o, err := server.ParseOwner(*owner)
		if err != nil {
			fmt.Fprintln(stderr, "rlab-agent serve: --owner:", err)
			return 2
		}
		opts.Owner = o
	}
	if err := checkSudoOwner(opts.Owner); err != nil {
		fmt.Fprintln(stderr, "rlab-agent serve:", err)
		return 2
	}
	if opts.Owner != nil {
		o := opts.Owner
		// Root working for a user: before anything else is done as
		// root, an agent started by a sudoers rule naming a file the
		// user can change is refused (SECURITY 176).
		if server.PinRootPATH(o) {
			if err := checkExecutable(); err != nil {
				fmt.Fprintln(stderr, "rlab-agent serve:", err)
				return 1
			}
		}
	}
	if err := testHooks(&opts); err != nil {
		fmt.Fprintln(stderr, "rlab-agent serve:", err)
		return 2
	}
	srv, err := server.New(opts)
	if err != nil {
		fmt.Fprintln(stderr, "rlab-agent serve:", err)
		return 1
	}
	// Detached descendants of workloads come back to the agent, which ends
	// them with its session, where no cgroup holds them.
	if err := server.EnableSubreaper(); err != nil {
		log.Warn("cannot become a child subreaper: detached workload processes may outlive the run", "err", err)
	}
	// SIGHUP/SIGTERM (the SSH session torn down) end the agent like EOF:
	// everything it started is stopped first.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	// A dropped link closes stdout; without this the first write would kill
	// the agent with SIGPIPE before it stops its children. Notify (not
	// Ignore) so the children still get the default SIGPIPE behaviour.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	err = srv.Serve(ctx, stdin, stdout)
	if errors.Is(err, server.ErrWatchdog) {
		return 3 // logged by Serve
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		log.Error("serve ended", "err", err)
		return 1
	}
	return 0
}

// checkRootArgs refuses, for a root agent, an argument holding whitespace or
// a control character. sudo matches a rule's arguments against the command's
// arguments joined by spaces, and the rule's `*` after --work-dir matches
// anything: the single argument `--work-dir "/home/alice/.cache/rlab/runs/x
// --owner 1000:1000"` passed the rule SECURITY.md gives and left the agent
// with no --owner, root working for root, so every workload the login user
// asked for ran as root (attack round 12, high). With no space inside an
// argument the words sudo matched are the arguments the agent parses, so the
// rule's last words `--owner UID:GID` are the owner it runs for.
func checkRootArgs(args []string) error {
	if geteuid() != 0 {
		return nil
	}
	for _, a := range args {
		for _, r := range a {
			if unicode.IsSpace(r) || unicode.IsControl(r) {
				return fmt.Errorf("argument %q holds whitespace or a control character: refusing to run as root with it, since a sudoers rule matches arguments joined by spaces and it could hide an option from the rule", a)
			}
		}
	}
	return nil
}

// ruleArgs are the words of the documented sudoers rule after `serve`, in
// their order, each followed by its value (SECURITY.md, "Running as
// non-root: sudoers"); the controller passes them so (engine/remote's
// Start and becomeScript).
var ruleArgs = []string{"--run-id", "--work-dir", "--owner"}

// checkRuleArgs refuses, for a root agent working for a user (--owner given,
// or started by sudo for a user other than root), any arguments but the
// rule's: `--run-id ID --work-dir DIR --owner UID:GID`, in that order, each
// once. sudo's `*` spans whole words, so the login user could insert options
// between the rule's words (`--run-id x --log-level debug --work-dir …`,
// attack round 14) or name one twice; the agent, not the rule, holds the
// line. It names the first argument that is not the rule's.
func checkRuleArgs(args []string, fs *flag.FlagSet) error {
	if geteuid() != 0 {
		return nil
	}
	forUser := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "owner" {
			forUser = true
		}
	})
	if su := getenv("SUDO_UID"); su != "" && su != "0" {
		forUser = true
	}
	if !forUser {
		return nil
	}
	const form = "a root agent working for a user takes exactly the sudoers rule's arguments, `serve --run-id ID --work-dir DIR --owner UID:GID`, in that order, each once"
	for i, name := range ruleArgs {
		switch {
		case 2*i >= len(args):
			return fmt.Errorf("started without %s: refusing to run; %s", name, form)
		case args[2*i] != name:
			return fmt.Errorf("argument %q where the rule has %s: refusing it; %s", args[2*i], name, form)
		case 2*i+1 >= len(args):
			return fmt.Errorf("%s has no value: %s", name, form)
		}
	}
	if len(args) > 2*len(ruleArgs) {
		return fmt.Errorf("argument %q after the rule's last: refusing it; %s", args[2*len(ruleArgs)], form)
	}
	return nil
}

// checkSudoOwner refuses a root agent that sudo started for a user other
// than root (SUDO_UID, which sudo sets itself) unless it works for that
// user: --owner given, naming SUDO_UID. Any sudoers rule for rlab names
// --owner (SECURITY.md, "Running as non-root: sudoers"); an agent started
// without one would run the user's workloads as root.
func checkSudoOwner(owner *server.Owner) error {
	su := getenv("SUDO_UID")
	if geteuid() != 0 || su == "" || su == "0" {
		return nil
	}
	if owner == nil {
		return fmt.Errorf("started by sudo for uid %s without --owner: refusing to run that user's workloads as root (a sudoers rule for rlab names --owner UID:GID)", su)
	}
	if strconv.Itoa(owner.UID) != su {
		return fmt.Errorf("started by sudo for uid %s with --owner %d:%d: refusing to work as root for another user than the one sudo started it for", su, owner.UID, owner.GID)
	}
	return nil
}
