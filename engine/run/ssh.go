package run

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/engine/lab"
	"github.com/rlab-dev/rlab/engine/remote"
	"github.com/rlab-dev/rlab/engine/sshx"
)

// SSHConnector reaches hosts over SSH (engine/sshx), installs the agent when
// its cache lacks it and starts it (engine/remote). One SSH connection per
// host for the whole run.
type SSHConnector struct {
	// Options of the dialers; KnownHosts is extended per host with the
	// host's own known_hosts file (lab `known_hosts`, a VM's generated one).
	SSH    sshx.Options
	Agents *remote.Agents
	// Identities are tried for hosts that name no identity file.
	Identities []string
	// Pull are the options of every artifact pull: the per-host byte cap
	// (0: remote.DefaultMaxPullBytes) and a progress callback.
	Pull remote.PullOptions
	// SSHTarget, when set, turns a lab host into its SSH target (the CLI's
	// rules for jump hosts); VM hosts and hosts read back from state.json
	// use the target's own fields.
	SSHTarget func(h *lab.Host) sshx.Target
	// Keep asks, on connections through the mux daemon (--persist), for
	// the agents it keeps between commands (remote.StartOptions.Keep),
	// leased for this run: the run's cleanup undoes what it created, and
	// the daemon's release stops whatever is left once the run lets go of
	// the agent (Ctrl-C included). rlab down leaves it off.
	Keep bool

	mu      sync.Mutex
	dialers map[string]*sshx.Dialer // by the host's own known_hosts file
}

func (s *SSHConnector) dialer(knownHosts string) (*sshx.Dialer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.dialers[knownHosts]; d != nil {
		return d, nil
	}
	o := s.SSH
	if knownHosts != "" {
		o.KnownHosts = append([]string{sshx.ExpandHome(knownHosts)}, o.KnownHosts...)
	}
	d, err := sshx.NewDialer(o)
	if err != nil {
		return nil, err
	}
	if s.dialers == nil {
		s.dialers = map[string]*sshx.Dialer{}
	}
	s.dialers[knownHosts] = d
	return d, nil
}

// Close closes the dialers (and the bastion connections they share).
func (s *SSHConnector) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.dialers {
		d.Close()
	}
	s.dialers = nil
	return nil
}

// Connect implements Connector.
func (s *SSHConnector) Connect(ctx context.Context, t Target, runID string) (Host, error) {
	d, err := s.dialer(t.KnownHosts)
	if err != nil {
		return nil, err
	}
	var st sshx.Target
	if t.Lab != nil && t.Lab.VM == nil && s.SSHTarget != nil {
		st = s.SSHTarget(t.Lab)
	} else {
		st = sshx.Target{Name: t.Name, Address: t.Address, Port: t.Port, User: t.User, IdentityFiles: s.Identities}
		if t.IdentityFile != "" {
			st.IdentityFiles = []string{sshx.ExpandHome(t.IdentityFile)}
		}
		if t.VM {
			st.NoJump = true // a local VM is reached directly, whatever ~/.ssh/config says
		} else if t.Jump != "" {
			if st.Jump, err = sshx.ParseJump(t.Jump); err != nil {
				return nil, err
			}
			for j := st.Jump; j != nil; j = j.Jump {
				if j.User == "" {
					j.User = st.User
				}
				j.IdentityFiles = st.IdentityFiles
			}
		}
	}
	c, err := d.Dial(ctx, st)
	if err != nil {
		return nil, err
	}
	so := remote.StartOptions{Host: t.Name, RunID: runID, Become: t.Become, Keep: s.Keep}
	var logf *redactingWriter
	if t.LogDir != "" {
		if f, ferr := os.OpenFile(filepath.Join(t.LogDir, "agent.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); ferr == nil {
			logf = &redactingWriter{w: f, c: f, r: newRedactor(t.Sensitive)}
			so.Stderr = logf
		}
	}
	// Open starts a cached agent in one session, else installs it (0 bytes
	// when the host has this build) and starts it.
	a, _, err := s.Agents.Open(ctx, c, so)
	if err != nil {
		c.Close()
		if logf != nil {
			logf.Close()
		}
		return nil, err
	}
	return &sshHost{a: a, c: c, log: logf, pull: s.Pull}, nil
}

// sshHost is a started agent over its SSH connection.
type sshHost struct {
	a    *remote.Agent
	c    *sshx.Client
	log  *redactingWriter
	pull remote.PullOptions
}

func (h *sshHost) Name() string { return h.a.Host }

// Hello is the agent's hello; a kept agent's carries no pid: the state
// records the pid for rlab down to end the run's agent, and a kept agent
// is the mux daemon's, perhaps serving another command by then (the
// daemon's release already stopped what this run left).
func (h *sshHost) Hello() proto.Hello {
	hello := h.a.Hello
	if h.a.Kept() {
		hello.PID = 0
	}
	return hello
}

func (h *sshHost) Call(ctx context.Context, method string, params, result any) error {
	return h.a.Call(ctx, method, params, result)
}

func (h *sshHost) Pull(ctx context.Context, files []proto.FileInfo, dst string) error {
	_, err := h.a.PullWith(ctx, files, dst, h.pull)
	return err
}

// HashesWhilePulling: engine/remote checks a file listed without a sha256
// against the sum the host computes while sending it.
func (h *sshHost) HashesWhilePulling() bool { return true }

func (h *sshHost) Close() error {
	err := h.a.Close()
	if cerr := h.c.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close ssh connection to %s: %w", h.a.Host, cerr)
	}
	if h.log != nil {
		h.log.Close()
	}
	return err
}

// agentLogMax bounds a host's agent.log in the run directory: the agent's
// slog log is small in normal runs; a host that floods its stderr must not
// fill the controller's disk.
const agentLogMax = 32 << 20

// redactingWriter writes the agent's log line by line with every sensitive
// value replaced (a value never spans lines of the agent's log), up to max
// bytes (agentLogMax when 0), then one line saying the rest was dropped.
type redactingWriter struct {
	mu      sync.Mutex
	w       io.Writer
	c       io.Closer
	r       *strings.Replacer
	buf     []byte
	max     int64
	written int64
	dropped int64
}

func (rw *redactingWriter) out(s string) error {
	max := rw.max
	if max == 0 {
		max = agentLogMax
	}
	if rw.dropped > 0 || rw.written+int64(len(s)) > max {
		if rw.dropped == 0 {
			io.WriteString(rw.w, fmt.Sprintf("[rlab: agent.log reached %d bytes; the rest of the agent's stderr is dropped]\n", max))
		}
		rw.dropped += int64(len(s))
		return nil
	}
	n, err := io.WriteString(rw.w, s)
	rw.written += int64(n)
	return err
}

func (rw *redactingWriter) Write(p []byte) (int, error) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	rw.buf = append(rw.buf, p...)
	for {
		i := bytes.IndexByte(rw.buf, '\n')
		if i < 0 {
			break
		}
		if err := rw.out(rw.r.Replace(string(rw.buf[:i+1]))); err != nil {
			return len(p), err
		}
		rw.buf = rw.buf[i+1:]
	}
	if len(rw.buf) > 64<<10 { // a line this long is flushed as it is, redacted
		err := rw.out(rw.r.Replace(string(rw.buf)))
		rw.buf = rw.buf[:0]
		return len(p), err
	}
	return len(p), nil
}

func (rw *redactingWriter) Close() error {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	if len(rw.buf) > 0 {
		rw.out(rw.r.Replace(string(rw.buf)))
		rw.buf = nil
	}
	return rw.c.Close()
}
