package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"syscall"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/server"
)

// bundle reads a proto.BundleRequest from stdin and writes the files as
// one tar stream to stdout (see proto.BundleCommand).
func bundle(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(proto.BundleCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	workDir := fs.String("work-dir", "", "the agent's work dir")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 || *workDir == "" {
		fmt.Fprintf(stderr, "rlab-agent bundle: want --work-dir DIR and no arguments\n")
		return 2
	}
	var req proto.BundleRequest
	b, err := io.ReadAll(io.LimitReader(stdin, proto.MaxBundleRequest+1))
	if err != nil {
		fmt.Fprintln(stderr, "rlab-agent bundle: read request:", err)
		return 1
	}
	if len(b) > proto.MaxBundleRequest {
		fmt.Fprintf(stderr, "rlab-agent bundle: request longer than %d bytes\n", proto.MaxBundleRequest)
		return 2
	}
	if err := json.Unmarshal(b, &req); err != nil {
		fmt.Fprintln(stderr, "rlab-agent bundle: decode request:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	w := bufio.NewWriterSize(stdout, 256<<10)
	err = server.Bundle(ctx, *workDir, req, w)
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		fmt.Fprintln(stderr, "rlab-agent bundle:", err)
		return 1
	}
	return 0
}
