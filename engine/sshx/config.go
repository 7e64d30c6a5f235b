package sshx

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/kevinburke/ssh_config"
)

// Target is one host to reach. Empty fields are filled from the user's
// ~/.ssh/config (Host aliases, HostName, User, Port, IdentityFile,
// IdentitiesOnly, ProxyJump), then from defaults; fields set here win.
type Target struct {
	Name          string   // the host's name in the lab, for messages
	Address       string   // host name, IP or ~/.ssh/config alias
	Port          int      // 0: from ssh config, else 22
	User          string   // "": from ssh config, else the local user
	IdentityFiles []string // tried after ssh-agent; "": from ssh config or ~/.ssh/id_*
	// Jump is the bastion to go through (itself possibly behind another).
	// nil: the ssh config's ProxyJump, if any.
	Jump *Target
	// NoJump ignores any ProxyJump from the ssh config.
	NoJump bool
}

// ParseJump turns a ProxyJump value ("[user@]host[:port][,...]") into a
// chain of targets, the last one the closest to the destination.
func ParseJump(spec string) (*Target, error) {
	if spec == "" || spec == "none" {
		return nil, nil
	}
	var prev *Target
	for _, hop := range strings.Split(spec, ",") {
		hop = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(hop), "ssh://"))
		if hop == "" {
			return nil, fmt.Errorf("jump %q: empty hop", spec)
		}
		t := &Target{Jump: prev, NoJump: prev == nil}
		if i := strings.LastIndex(hop, "@"); i >= 0 {
			t.User, hop = hop[:i], hop[i+1:]
		}
		host, port := hop, ""
		if h, p, err := net.SplitHostPort(hop); err == nil {
			host, port = h, p
		}
		if host == "" || strings.ContainsAny(host, " \t/") {
			return nil, fmt.Errorf("jump %q: bad host %q", spec, host)
		}
		t.Address, t.Name = host, "bastion "+host
		if port != "" {
			n, err := strconv.Atoi(port)
			if err != nil || n <= 0 || n > 65535 {
				return nil, fmt.Errorf("jump %q: bad port %q", spec, port)
			}
			t.Port = n
		}
		prev = t
	}
	return prev, nil
}

// resolved is a Target after ssh config and defaults.
type resolved struct {
	name       string
	host       string // what to dial (HostName)
	port       int
	user       string
	identities []string
	// identitiesOnly: ssh config's IdentitiesOnly yes (auth.signers).
	identitiesOnly bool
	jump           *resolved
}

func (r *resolved) addr() string { return net.JoinHostPort(r.host, strconv.Itoa(r.port)) }

// key identifies a connection to share (bastions): user@host:port via chain.
func (r *resolved) key() string {
	k := r.user + "@" + r.addr()
	if r.jump != nil {
		k += " via " + r.jump.key()
	}
	return k
}

// maxSSHConfigBytes caps the ssh config rlab reads (OpenSSH's own are a few
// KiB; a device or a huge file gives an error, not an exhausted memory).
const maxSSHConfigBytes = 16 << 20

// readCapped reads a file a user or a lab named, refusing what is not a
// regular file (a device such as /dev/zero, a FIFO, which would block or
// never end) and files over max bytes. what names the file in errors. The
// open does not block on a FIFO (O_NONBLOCK), and the read stops at max+1
// bytes whatever the file turns into after the check.
func readCapped(path string, max int64, what string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("read %s %s: not a regular file (%s)", what, path, st.Mode().Type())
	}
	if st.Size() > max {
		return nil, fmt.Errorf("read %s %s: %d bytes, over the %d MiB rlab reads", what, path, st.Size(), max>>20)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", what, path, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("read %s %s: over the %d MiB rlab reads", what, path, max>>20)
	}
	return b, nil
}

// sshConfig reads values from the user's ssh config; a nil *sshConfig has none.
type sshConfig struct{ cfg *ssh_config.Config }

func loadSSHConfig(path string) (*sshConfig, error) {
	if path == "none" {
		return nil, nil
	}
	if path == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, nil
		}
		path = filepath.Join(home, ".ssh", "config")
	}
	b, err := readCapped(path, maxSSHConfigBytes, "ssh config")
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	cfg, err := ssh_config.DecodeBytes(b)
	if err != nil {
		return nil, fmt.Errorf("parse ssh config %s: %w", path, err)
	}
	return &sshConfig{cfg}, nil
}

func (c *sshConfig) get(alias, key string) string {
	if c == nil {
		return ""
	}
	v, _ := c.cfg.Get(alias, key)
	return v
}

func (c *sshConfig) getAll(alias, key string) []string {
	if c == nil {
		return nil
	}
	v, _ := c.cfg.GetAll(alias, key)
	return v
}

func (d *Dialer) resolve(t *Target, depth int) (*resolved, error) {
	if depth > 8 {
		return nil, fmt.Errorf("jump chain to %s is longer than 8 hops (a loop?)", t.Address)
	}
	if t.Address == "" {
		return nil, errors.New("no address")
	}
	cfg := d.sshCfg
	alias := t.Address
	r := &resolved{name: t.Name, host: alias}
	if hn := cfg.get(alias, "HostName"); hn != "" {
		r.host = strings.ReplaceAll(hn, "%h", alias)
	}
	r.port = t.Port
	if r.port == 0 {
		if p := cfg.get(alias, "Port"); p != "" {
			n, err := strconv.Atoi(p)
			if err != nil {
				return nil, fmt.Errorf("ssh config: host %s: bad Port %q", alias, p)
			}
			r.port = n
		} else {
			r.port = 22
		}
	}
	r.user = t.User
	if r.user == "" {
		r.user = cfg.get(alias, "User")
	}
	if r.user == "" {
		u, err := user.Current()
		if err != nil {
			return nil, fmt.Errorf("no user given and the local user is unknown: %w", err)
		}
		r.user = u.Username
	}
	r.identities = expandAll(t.IdentityFiles)
	if len(r.identities) == 0 {
		r.identities = expandAll(cfg.getAll(alias, "IdentityFile"))
	}
	if len(r.identities) == 0 {
		r.identities = defaultIdentities()
	}
	r.identitiesOnly = strings.EqualFold(cfg.get(alias, "IdentitiesOnly"), "yes")
	jump := t.Jump
	if jump == nil && !t.NoJump {
		j, err := ParseJump(cfg.get(alias, "ProxyJump"))
		if err != nil {
			return nil, fmt.Errorf("ssh config: host %s: %w", alias, err)
		}
		jump = j
	}
	if jump != nil {
		jr, err := d.resolve(jump, depth+1)
		if err != nil {
			return nil, fmt.Errorf("jump host %s: %w", jump.Address, err)
		}
		r.jump = jr
	}
	return r, nil
}

func expandAll(paths []string) []string {
	var out []string
	for _, p := range paths {
		if p == "" {
			continue
		}
		out = append(out, ExpandHome(p))
	}
	return out
}

// ExpandHome replaces a leading ~/ with the user's home directory.
func ExpandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, p[1:])
		}
	}
	return p
}

func defaultIdentities() []string {
	var out []string
	for _, n := range []string{"id_ed25519", "id_ecdsa", "id_rsa"} {
		p := ExpandHome("~/.ssh/" + n)
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}
