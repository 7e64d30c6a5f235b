package sshx

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// UnknownHostKeyError is returned when known_hosts has no entry for a host.
// Its message shows the key's fingerprint and how to trust it.
type UnknownHostKeyError struct {
	Host       string // host's reference name in the lab
	Addr       string // host:port as dialed (known_hosts form is knownhosts.Normalize(Addr))
	Key        ssh.PublicKey
	KnownHosts string // the file rlab would record the key in
	ViaJump    bool
}

func (e *UnknownHostKeyError) Error() string {
	h, p, _ := net.SplitHostPort(e.Addr)
	scan := fmt.Sprintf("ssh-keyscan -p %s -t %s %s >> %s", p, keyscanType(e.Key.Type()), h, e.KnownHosts)
	if e.ViaJump {
		scan = fmt.Sprintf("ssh -J <bastion> -o StrictHostKeyChecking=accept-new -o UserKnownHostsFile=%s -p %s %s true", e.KnownHosts, p, h)
	}
	return fmt.Sprintf("unknown host key for %s: %s %s is not in %s; if that fingerprint is right, re-run with --accept-new-host-keys to record it, or add it with: %s",
		e.Addr, e.Key.Type(), ssh.FingerprintSHA256(e.Key), e.KnownHosts, scan)
}

// ChangedHostKeyError is returned when the host offers a key other than the
// one(s) known for it. It is always fatal: accept-new never overrides it.
type ChangedHostKeyError struct {
	Addr  string
	Key   ssh.PublicKey
	Known []knownhosts.KnownKey
}

func (e *ChangedHostKeyError) Error() string {
	var known []string
	for _, k := range e.Known {
		known = append(known, fmt.Sprintf("%s %s (%s:%d)", k.Key.Type(), ssh.FingerprintSHA256(k.Key), k.Filename, k.Line))
	}
	return fmt.Sprintf("HOST KEY CHANGED for %s: it offered %s %s but known_hosts has %s; this may be an attack (or the host was reinstalled): if you are sure, remove the old entry with: ssh-keygen -R %s -f %s",
		e.Addr, e.Key.Type(), ssh.FingerprintSHA256(e.Key), strings.Join(known, ", "), knownhosts.Normalize(e.Addr), fileOf(e.Known))
}

func fileOf(k []knownhosts.KnownKey) string {
	if len(k) == 0 {
		return "~/.ssh/known_hosts"
	}
	return k[0].Filename
}

// RevokedHostKeyError is returned when the host's key is marked @revoked.
type RevokedHostKeyError struct {
	Addr string
	Key  ssh.PublicKey
	At   knownhosts.KnownKey
}

func (e *RevokedHostKeyError) Error() string {
	return fmt.Sprintf("host key of %s (%s %s) is marked @revoked in %s:%d", e.Addr, e.Key.Type(), ssh.FingerprintSHA256(e.Key), e.At.Filename, e.At.Line)
}

func keyscanType(t string) string {
	switch {
	case strings.HasPrefix(t, "ssh-ed25519"):
		return "ed25519"
	case strings.HasPrefix(t, "ecdsa"):
		return "ecdsa"
	case strings.HasPrefix(t, "ssh-rsa"), strings.HasPrefix(t, "rsa-"):
		return "rsa"
	}
	return t
}

// hostKeys verifies host keys against known_hosts files and, when asked,
// records new ones. One value is shared by every connection of a run, so
// recording is serialised in-process (mu) and across processes (flock).
type hostKeys struct {
	files     []string // read; the first is where new keys are recorded
	acceptNew bool

	mu       sync.Mutex
	cb       ssh.HostKeyCallback // reloaded after a key is recorded or a file changes
	stamp    string              // the files' state cb was read from
	accepted map[string]ssh.PublicKey
}

func newHostKeys(files []string, acceptNew bool) (*hostKeys, error) {
	if len(files) == 0 {
		return nil, errors.New("no known_hosts file")
	}
	hk := &hostKeys{files: files, acceptNew: acceptNew, accepted: map[string]ssh.PublicKey{}}
	if err := hk.reload(); err != nil {
		return nil, err
	}
	return hk, nil
}

// fileStamp sums the files' state (size, mtime, inode): a change means
// known_hosts was edited (a key added, removed or marked @revoked).
func (hk *hostKeys) fileStamp() string {
	var b strings.Builder
	for _, f := range hk.files {
		st, err := os.Stat(f)
		if err != nil {
			b.WriteString("-;")
			continue
		}
		var ino uint64
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			ino = sys.Ino
		}
		fmt.Fprintf(&b, "%d:%d:%d;", st.Size(), st.ModTime().UnixNano(), ino)
	}
	return b.String()
}

// current returns the callback for the files as they are now: a Dialer
// that lives long (the mux daemon's) sees keys added or revoked since.
func (hk *hostKeys) current() ssh.HostKeyCallback {
	hk.mu.Lock()
	defer hk.mu.Unlock()
	if hk.fileStamp() != hk.stamp {
		// On a read error keep the last good callback; the next call
		// tries again.
		hk.reload()
	}
	return hk.cb
}

func (hk *hostKeys) reload() error {
	stamp := hk.fileStamp()
	var existing []string
	for _, f := range hk.files {
		if _, err := os.Stat(f); err == nil {
			existing = append(existing, f)
		} else if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("read known_hosts: %w", err)
		}
	}
	if len(existing) == 0 {
		// knownhosts.New with no files rejects every host as unknown, which
		// is what an absent file means.
		cb, err := knownhosts.New()
		if err != nil {
			return err
		}
		hk.cb, hk.stamp = cb, stamp
		return nil
	}
	cb, err := knownhosts.New(existing...)
	if err != nil {
		return fmt.Errorf("read known_hosts: %w", err)
	}
	hk.cb, hk.stamp = cb, stamp
	return nil
}

// fakeKey is offered to the callback to learn which keys are known for a
// host: the KeyError it provokes lists them.
type fakeKey struct{}

func (fakeKey) Type() string                        { return "rlab-probe" }
func (fakeKey) Marshal() []byte                     { return []byte("rlab-probe-not-a-key") }
func (fakeKey) Verify([]byte, *ssh.Signature) error { return errors.New("probe key") }

type fakeAddr struct{ s string }

func (a fakeAddr) Network() string { return "tcp" }
func (a fakeAddr) String() string  { return a.s }

// knownKeys returns the keys known_hosts holds for addr (host:port).
func (hk *hostKeys) knownKeys(addr string) []knownhosts.KnownKey {
	cb := hk.current()
	err := cb(addr, fakeAddr{addr}, fakeKey{})
	var ke *knownhosts.KeyError
	if errors.As(err, &ke) {
		return ke.Want
	}
	return nil
}

// algorithms returns the host key algorithms to offer for addr: those of the
// keys known for it, so the server cannot pick a type we have no entry for
// and make a known host look changed. nil means no known key (use defaults).
func (hk *hostKeys) algorithms(addr string) []string {
	var algos []string
	seen := map[string]bool{}
	add := func(a ...string) {
		for _, x := range a {
			if !seen[x] {
				seen[x] = true
				algos = append(algos, x)
			}
		}
	}
	known := hk.knownKeys(addr)
	for _, k := range known {
		switch t := k.Key.Type(); t {
		case ssh.KeyAlgoRSA:
			add(ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA)
		default:
			add(t)
		}
	}
	// A known key may be an @cert-authority key (the callback does not say
	// which, and a CA may sign any host key type): also accept certificates,
	// after plain keys. A certificate passes only if an authority signed it.
	if len(known) > 0 {
		add(ssh.CertAlgoED25519v01, ssh.CertAlgoECDSA256v01, ssh.CertAlgoECDSA384v01, ssh.CertAlgoECDSA521v01,
			ssh.CertAlgoRSASHA512v01, ssh.CertAlgoRSASHA256v01)
	}
	return algos
}

// callback returns the HostKeyCallback for one host.
func (hk *hostKeys) callback(name string, viaJump bool) ssh.HostKeyCallback {
	return func(addr string, remote net.Addr, key ssh.PublicKey) error {
		cb := hk.current()
		hk.mu.Lock()
		if k, ok := hk.accepted[knownhosts.Normalize(addr)]; ok && bytes.Equal(k.Marshal(), key.Marshal()) {
			hk.mu.Unlock()
			return nil
		}
		hk.mu.Unlock()
		err := cb(addr, remote, key)
		if err == nil {
			return nil
		}
		var re *knownhosts.RevokedError
		if errors.As(err, &re) {
			return &RevokedHostKeyError{Addr: addr, Key: key, At: re.Revoked}
		}
		var ke *knownhosts.KeyError
		if !errors.As(err, &ke) {
			return err // e.g. a certificate from an authority we do not trust
		}
		if len(ke.Want) > 0 {
			return &ChangedHostKeyError{Addr: addr, Key: key, Known: ke.Want}
		}
		if !hk.acceptNew {
			return &UnknownHostKeyError{Host: name, Addr: addr, Key: key, KnownHosts: hk.files[0], ViaJump: viaJump}
		}
		return hk.record(addr, key)
	}
}

// record appends a new host key to the first known_hosts file. Many hosts
// may be accepted at once, by this process or by several rlab processes, so
// the append is done under an exclusive flock and re-checks the file first.
func (hk *hostKeys) record(addr string, key ssh.PublicKey) error {
	hk.mu.Lock()
	defer hk.mu.Unlock()
	file := hk.files[0]
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return fmt.Errorf("record host key of %s: %w", addr, err)
	}
	f, err := os.OpenFile(file, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("record host key of %s: %w", addr, err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("record host key of %s: lock %s: %w", addr, file, err)
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	// Another process may have recorded a key for this host meanwhile.
	if err := hk.reload(); err != nil {
		return err
	}
	if err := hk.cb(addr, fakeAddr{addr}, key); err == nil {
		return nil
	} else {
		var ke *knownhosts.KeyError
		if errors.As(err, &ke) && len(ke.Want) > 0 {
			return &ChangedHostKeyError{Addr: addr, Key: key, Known: ke.Want}
		}
	}
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("record host key of %s: %w", addr, err)
	}
	line := knownhosts.Line([]string{knownhosts.Normalize(addr)}, key) + "\n"
	if st.Size() > 0 && !endsWithNewline(f, st.Size()) {
		line = "\n" + line
	}
	if _, err := f.WriteString(line); err != nil {
		return fmt.Errorf("record host key of %s in %s: %w", addr, file, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("record host key of %s in %s: %w", addr, file, err)
	}
	hk.accepted[knownhosts.Normalize(addr)] = key
	return hk.reload()
}

func endsWithNewline(f *os.File, size int64) bool {
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, size-1); err != nil {
		return true
	}
	return b[0] == '\n'
}
