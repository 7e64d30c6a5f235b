package main

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestOnInterrupt: the first SIGINT/SIGTERM starts the teardown and rlab
// exits 130 at the bound it printed even when the teardown never returns
// (goroutines blocked on a host); a second one exits 130 at once (issue 24:
// it used to close a channel the blocked goroutines never looked at).
func TestOnInterrupt(t *testing.T) {
	// No clock is read: the second signal's case gives the teardown an
	// hour, so only an exit that does not wait for it ends within the 5 s
	// guard; the first signal's gives it 300 ms, which must end it.
	cases := []struct {
		name    string
		signals []os.Signal
		bound   time.Duration // the teardown's
		want    string        // in stderr
	}{
		{"second signal exits at once", []os.Signal{os.Interrupt, os.Interrupt}, time.Hour, "again: stopping at once"},
		{"first signal is bounded", []os.Signal{syscall.SIGTERM}, 300 * time.Millisecond, "teardown did not end within 300ms"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sigs := make(chan os.Signal, 2)
			var mu sync.Mutex
			var stderr bytes.Buffer
			w := writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return stderr.Write(p) })
			exited := make(chan int, 2)
			stopped := make(chan os.Signal, 1)
			go onInterrupt(sigs, w, tc.bound, func(s os.Signal) { stopped <- s }, func(code int) { exited <- code })
			for _, s := range tc.signals {
				sigs <- s
			}
			select {
			case code := <-exited:
				if code != exitInterrupted {
					t.Errorf("exit %d, want %d", code, exitInterrupted)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("never exited")
			}
			if s := <-stopped; s != tc.signals[0] {
				t.Errorf("teardown started by %v", s)
			}
			mu.Lock()
			defer mu.Unlock()
			if !strings.Contains(stderr.String(), "tearing down (at most ") || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr %q, want %q", stderr.String(), tc.want)
			}
		})
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
