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
	KnownHosts string // the file rlab would record the key in (the user's)
	ViaJump    bool
	LabFiles   []string // the lab's known_hosts files, also without an entry
}

func (e *UnknownHostKeyError) Error() string {
	h, p, _ := net.SplitHostPort(e.Addr)
	scan := fmt.Sprintf("ssh-keyscan -p %s -t %s %s >> %s", p, keyscanType(e.Key.Type()), h, e.KnownHosts)
	if e.ViaJump {
		scan = fmt.Sprintf("ssh -J <bastion> -o StrictHostKeyChecking=accept-new -o UserKnownHostsFile=%s -p %s %s true", e.KnownHosts, p, h)
	}
	in := e.KnownHosts
	if len(e.LabFiles) > 0 {
		in += " nor in the lab's " + strings.Join(e.LabFiles, ", ")
	}
	return fmt.Sprintf("unknown host key for %s: %s %s is not in %s; if that fingerprint is right, re-run with --accept-new-host-keys to record it, or add it with: %s",
		e.Addr, e.Key.Type(), ssh.FingerprintSHA256(e.Key), in, scan)
}

// ChangedHostKeyError is returned when the host offers a key other than the
// one(s) known for it. It is always fatal: accept-new never overrides it.
type ChangedHostKeyError struct {
	Addr  string
	Key   ssh.PublicKey
	Known []knownhosts.KnownKey
	// LabFiles are the lab's known_hosts files that list the offered key,
	// overruled by the user's entry for the host.
	LabFiles []string
}

func (e *ChangedHostKeyError) Error() string {
	var known []string
	for _, k := range e.Known {
		known = append(known, fmt.Sprintf("%s %s (%s:%d)", k.Key.Type(), ssh.FingerprintSHA256(k.Key), k.Filename, k.Line))
	}
	lab := ""
	if len(e.LabFiles) > 0 {
		lab = fmt.Sprintf(" (the lab's known_hosts %s lists the offered key, but a key in your own known_hosts always wins)", strings.Join(e.LabFiles, ", "))
	}
	return fmt.Sprintf("HOST KEY CHANGED for %s: it offered %s %s but known_hosts has %s%s; this may be an attack (or the host was reinstalled): if you are sure, remove the old entry with: ssh-keygen -R %s -f %s",
		e.Addr, e.Key.Type(), ssh.FingerprintSHA256(e.Key), strings.Join(known, ", "), lab, knownhosts.Normalize(e.Addr), fileOf(e.Known))
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

// maxKnownHostsBytes caps a known_hosts file rlab reads: a lab may name any
// path, and a device or a huge file must give an error, not exhaust memory.
const maxKnownHostsBytes = 64 << 20

// hostKeys verifies host keys against known_hosts files and, when asked,
// records new ones. One value is shared by every connection of a run, so
// recording is serialised in-process (mu) and across processes (flock).
//
// files are the user's (~/.ssh/known_hosts or --known-hosts): they decide
// for every host they have an entry for, and the first is the only file
// rlab ever writes. labFiles are files a lab (or a run's state.json) named:
// they are read, never written, and only vouch for hosts the user's files
// have no entry for, so a key the user pinned always wins.
type hostKeys struct {
	files     []string
	labFiles  []string
	acceptNew bool

	mu       sync.Mutex
	user     ssh.HostKeyCallback     // the user's files; reloaded after a key is recorded or a file changes
	all      ssh.HostKeyCallback     // the user's files and the lab's
	ca       map[string]map[int]bool // file -> lines that are @cert-authority
	stamp    string                  // the files' state the callbacks were read from
	accepted map[string]ssh.PublicKey
}

func newHostKeys(files, labFiles []string, acceptNew bool) (*hostKeys, error) {
	if len(files) == 0 {
		return nil, errors.New("no known_hosts file")
	}
	hk := &hostKeys{files: files, labFiles: labFiles, acceptNew: acceptNew, accepted: map[string]ssh.PublicKey{}}
	if err := hk.reload(); err != nil {
		return nil, err
	}
	return hk, nil
}

func (hk *hostKeys) allFiles() []string {
	return append(append([]string(nil), hk.files...), hk.labFiles...)
}

// fileStamp sums the files' state (size, mtime, inode): a change means
// known_hosts was edited (a key added, removed or marked @revoked).
func (hk *hostKeys) fileStamp() string {
	var b strings.Builder
	for _, f := range hk.allFiles() {
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

// current returns the callbacks for the files as they are now: a Dialer
// that lives long (the mux daemon's) sees keys added or revoked since.
func (hk *hostKeys) current() (user, all ssh.HostKeyCallback) {
	hk.mu.Lock()
	defer hk.mu.Unlock()
	if hk.fileStamp() != hk.stamp {
		// On a read error keep the last good callbacks; the next call
		// tries again.
		hk.reload()
	}
	return hk.user, hk.all
}

// isCA reports whether a known key came from an @cert-authority line.
func (hk *hostKeys) isCA(k knownhosts.KnownKey) bool {
	hk.mu.Lock()
	defer hk.mu.Unlock()
	return hk.ca[k.Filename][k.Line]
}

func (hk *hostKeys) reload() error {
	stamp := hk.fileStamp()
	ca := map[string]map[int]bool{}
	load := func(files []string) (ssh.HostKeyCallback, error) {
		var existing []string
		for _, f := range files {
			marks, err := scanKnownHosts(f)
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, err
			}
			ca[f] = marks
			existing = append(existing, f)
		}
		// knownhosts.New with no files rejects every host as unknown,
		// which is what an absent file means.
		cb, err := knownhosts.New(existing...)
		if err != nil {
			return nil, fmt.Errorf("read known_hosts: %w", err)
		}
		return cb, nil
	}
	user, err := load(hk.files)
	if err != nil {
		return err
	}
	all, err := load(hk.allFiles())
	if err != nil {
		return err
	}
	hk.user, hk.all, hk.ca, hk.stamp = user, all, ca, stamp
	return nil
}

// scanKnownHosts checks that a known_hosts file is a regular file within
// maxKnownHostsBytes (knownhosts.New would read a device or a FIFO
// forever) and returns the numbers of its @cert-authority lines, counted
// as knownhosts counts them.
func scanKnownHosts(f string) (map[int]bool, error) {
	b, err := readCapped(f, maxKnownHostsBytes, "known_hosts file")
	if err != nil {
		return nil, err
	}
	return caLines(b), nil
}

// caLines returns the numbers (from 1) of the @cert-authority lines of a
// known_hosts file's content.
func caLines(b []byte) map[int]bool {
	marks := map[int]bool{}
	for i, line := range bytes.Split(b, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if w, _, _ := bytes.Cut(line, []byte(" ")); string(bytes.TrimSpace(w)) == "@cert-authority" || bytes.HasPrefix(line, []byte("@cert-authority\t")) {
			marks[i+1] = true
		}
	}
	return marks
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

// known returns the entries that decide for addr (host:port): the user's,
// when they have any for it, else the lab's; and the lab's verdict on key
// when the user's entries decide (nil: the lab's files vouch for it).
func (hk *hostKeys) known(addr string) (entries []knownhosts.KnownKey, fromUser bool) {
	user, all := hk.current()
	if w := want(user, addr); len(w) > 0 {
		return w, true
	}
	return want(all, addr), false
}

// want returns the entries cb holds for addr, @cert-authority lines
// included: the KeyError a key no file holds provokes lists them.
func want(cb ssh.HostKeyCallback, addr string) []knownhosts.KnownKey {
	var ke *knownhosts.KeyError
	if errors.As(cb(addr, fakeAddr{addr}, fakeKey{}), &ke) {
		return ke.Want
	}
	return nil
}

// knownKeys returns the keys known_hosts holds for addr (host:port).
func (hk *hostKeys) knownKeys(addr string) []knownhosts.KnownKey {
	k, _ := hk.known(addr)
	return k
}

// certAlgos are the host certificate algorithms of a key type, best first.
func certAlgos(keyType string) []string {
	switch keyType {
	case ssh.KeyAlgoED25519:
		return []string{ssh.CertAlgoED25519v01}
	case ssh.KeyAlgoECDSA256:
		return []string{ssh.CertAlgoECDSA256v01}
	case ssh.KeyAlgoECDSA384:
		return []string{ssh.CertAlgoECDSA384v01}
	case ssh.KeyAlgoECDSA521:
		return []string{ssh.CertAlgoECDSA521v01}
	case ssh.KeyAlgoRSA:
		return []string{ssh.CertAlgoRSASHA512v01, ssh.CertAlgoRSASHA256v01}
	}
	return nil
}

// allCertAlgos are every host certificate algorithm x/crypto verifies.
var allCertAlgos = []string{ssh.CertAlgoED25519v01, ssh.CertAlgoECDSA256v01, ssh.CertAlgoECDSA384v01, ssh.CertAlgoECDSA521v01,
	ssh.CertAlgoRSASHA512v01, ssh.CertAlgoRSASHA256v01}

// algorithms returns the host key algorithms to offer for addr: those of the
// keys known for it, so the server cannot pick a type we have no entry for
// and make a known host look changed. nil means no known key (use defaults).
//
// When an @cert-authority vouches for the host, certificates come first
// (the CA's own key type's first, then any other: a CA may sign any host
// key type), as OpenSSH's client orders them: a stock sshd with a
// HostCertificate offers the plain key too, and a client that asked for
// the plain key first would meet a key no line lists and call it changed.
// Plain algorithms follow for the plain keys listed; with only authorities
// listed, the CA key types' plain algorithms come last, so a host without
// a certificate gets an error that says so rather than "no common
// algorithm".
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
	plain := func(t string) []string {
		if t == ssh.KeyAlgoRSA {
			return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
		}
		return []string{t}
	}
	known := hk.knownKeys(addr)
	var cas, keys []knownhosts.KnownKey
	for _, k := range known {
		if hk.isCA(k) {
			cas = append(cas, k)
		} else {
			keys = append(keys, k)
		}
	}
	for _, k := range cas {
		add(certAlgos(k.Key.Type())...)
	}
	if len(cas) > 0 {
		add(allCertAlgos...)
	}
	for _, k := range keys {
		add(plain(k.Key.Type())...)
	}
	if len(keys) == 0 {
		for _, k := range cas {
			add(plain(k.Key.Type())...)
		}
	}
	return algos
}

// NotCertifiedError is returned when the only entries for a host are
// @cert-authority lines and it offered a plain key, not a certificate.
type NotCertifiedError struct {
	Addr string
	Key  ssh.PublicKey
	CAs  []knownhosts.KnownKey
}

func (e *NotCertifiedError) Error() string {
	var cas []string
	for _, k := range e.CAs {
		cas = append(cas, fmt.Sprintf("%s %s (%s:%d)", k.Key.Type(), ssh.FingerprintSHA256(k.Key), k.Filename, k.Line))
	}
	return fmt.Sprintf("host %s offered a plain %s key %s, not a host certificate; known_hosts trusts it only through the @cert-authority %s: give the host a certificate (sshd HostCertificate) or list its key",
		e.Addr, e.Key.Type(), ssh.FingerprintSHA256(e.Key), strings.Join(cas, ", "))
}

// callback returns the HostKeyCallback for one host.
func (hk *hostKeys) callback(name string, viaJump bool) ssh.HostKeyCallback {
	return func(addr string, remote net.Addr, key ssh.PublicKey) error {
		user, all := hk.current()
		hk.mu.Lock()
		if k, ok := hk.accepted[knownhosts.Normalize(addr)]; ok && bytes.Equal(k.Marshal(), key.Marshal()) {
			hk.mu.Unlock()
			return nil
		}
		hk.mu.Unlock()
		errAll := all(addr, remote, key)
		var re *knownhosts.RevokedError
		if errors.As(errAll, &re) {
			// A revocation in any file is honoured: it only takes trust away.
			return &RevokedHostKeyError{Addr: addr, Key: key, At: re.Revoked}
		}
		err, fromUser := errAll, false
		if len(want(user, addr)) > 0 {
			// The user's files have an entry for this host: they decide
			// alone (a lab's file cannot override a pinned key).
			err, fromUser = user(addr, remote, key), true
		}
		if err == nil {
			return nil
		}
		if errors.As(err, &re) {
			return &RevokedHostKeyError{Addr: addr, Key: key, At: re.Revoked}
		}
		var ke *knownhosts.KeyError
		if !errors.As(err, &ke) {
			return err // e.g. a certificate from an authority we do not trust
		}
		if len(ke.Want) > 0 {
			if _, isCert := key.(*ssh.Certificate); !isCert && hk.allCA(ke.Want) {
				return &NotCertifiedError{Addr: addr, Key: key, CAs: ke.Want}
			}
			ce := &ChangedHostKeyError{Addr: addr, Key: key, Known: ke.Want}
			if fromUser && errAll == nil {
				ce.LabFiles = hk.labFiles
			}
			return ce
		}
		if !hk.acceptNew {
			return &UnknownHostKeyError{Host: name, Addr: addr, Key: key, KnownHosts: hk.files[0], ViaJump: viaJump, LabFiles: hk.labFiles}
		}
		return hk.record(addr, key)
	}
}

func (hk *hostKeys) allCA(ks []knownhosts.KnownKey) bool {
	for _, k := range ks {
		if !hk.isCA(k) {
			return false
		}
	}
	return len(ks) > 0
}

// record appends a new host key to the user's known_hosts file (the first
// of files), never to a lab's. Many hosts may be accepted at once, by this
// process or by several rlab processes, so the append is done under an
// exclusive flock and re-checks the files first.
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
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("record host key of %s: %w", addr, err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("record host key of %s: %s is not a regular file", addr, file)
	}
	// Another process may have recorded a key for this host meanwhile.
	if err := hk.reload(); err != nil {
		return err
	}
	if err := hk.all(addr, fakeAddr{addr}, key); err == nil {
		return nil
	} else {
		var ke *knownhosts.KeyError
		if errors.As(err, &ke) && len(ke.Want) > 0 {
			return &ChangedHostKeyError{Addr: addr, Key: key, Known: ke.Want}
		}
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
