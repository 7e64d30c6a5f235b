package sshx

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/rlab-dev/rlab/engine/sshx/sshtest"
)

// TestWaitsEnd: a host that completes login and then never answers a
// channel open, or never answers an exec request, or accepts the command
// and never sends a byte, holds no caller past its limit or its context:
// the connection is closed (as closing a session does not end a read with
// OpenSSH), and the error names the step. Keepalives are answered
// throughout, so nothing else would end the wait (issue 24, high 3).
func TestWaitsEnd(t *testing.T) {
	const limit = 300 * time.Millisecond
	cases := []struct {
		name   string
		stage  func(s *sshtest.Server)
		cancel bool // end by the context instead of the limit
		want   string
	}{
		{"channel open", func(s *sshtest.Server) { s.StallOpens.Store(true) }, false, "open session: no answer within 300ms"},
		{"channel open, ctx", func(s *sshtest.Server) { s.StallOpens.Store(true) }, true, "open session: stopped (context canceled)"},
		{"exec request", func(s *sshtest.Server) { s.StallExec.Store(true) }, false, "start command: no answer within 300ms"},
		{"silent command", nil, false, "read output: no progress for 300ms"},
		{"silent command, ctx", nil, true, "read output: stopped (context canceled)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			block := make(chan struct{})
			t.Cleanup(func() { close(block) })
			srv := sshtest.Start(t, func(cmd string, _ io.Reader, _, _ io.Writer) int { <-block; return 0 })
			d := newDialer(t, Options{KnownHosts: []string{sshtest.WriteKnownHosts(t, srv.KnownHostsLine())}, AgentSocket: "none"})
			c, err := d.Dial(context.Background(), target(srv, srv.KeyFile))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if tc.stage != nil {
				tc.stage(srv)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			lim := limit
			if tc.cancel {
				lim = time.Hour
				time.AfterFunc(limit, cancel)
			}
			start := time.Now()
			done := make(chan error, 1)
			go func() {
				s, err := c.OpenSession(ctx, lim)
				if err != nil {
					done <- err
					return
				}
				out, _ := s.StdoutPipe()
				if err := c.Start(ctx, s, "sleep", lim); err != nil {
					done <- err
					return
				}
				w := c.WatchWith(ctx, "read output", lim, WatchOptions{Idle: true})
				_, err = io.Copy(io.Discard, out)
				w.Stop()
				done <- w.Fired(err)
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err %v, want %q", err, tc.want)
				}
				if !tc.cancel && !errors.Is(err, ErrStalled) {
					t.Errorf("err %v is not ErrStalled", err)
				}
				if el := time.Since(start); el > 5*time.Second {
					t.Errorf("took %s", el)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the wait did not end within 10s")
			}
			select {
			case <-c.Gone():
			case <-time.After(5 * time.Second):
				t.Error("the connection was not closed")
			}
		})
	}
}
