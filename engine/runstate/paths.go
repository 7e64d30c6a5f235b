package runstate

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/rlab-dev/rlab/engine/sshx"
)

// A run directory may come from someone else (a classmate's, a bug
// report's), and rlab down reads the files its state.json names as host key
// store (known_hosts) and login key (identity_file). A crafted state.json
// must not make rlab trust a host key file, or offer a private key, that
// neither this user's own run chose nor this user names: so each host entry
// a run writes carries an HMAC of its paths under a key only this user's
// rlab holds (StateKeyFile), and down uses a path it names only when that
// HMAC holds, when the file lies inside the run directory, or when the user
// names the same file by flag (-i, --known-hosts).

// stateKeyFile is where the key that signs state.json's paths lives: the
// user's config folder (0700), the file 0600.
func stateKeyFile() (string, error) {
	d, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "rlab", "state.key"), nil
}

const stateKeyLen = 32

// ReadKey is this user's state key, nil when there is none or it is not
// the user's own private regular file: what down checks a host's paths
// with (PathsSigned), whether or not the whole file was signed with it.
func ReadKey() []byte { return readStateKey(false) }

// readStateKey reads the user's state key, nil when there is none or it is
// not the user's own private regular file. create makes one when missing.
func readStateKey(create bool) []byte {
	p, err := stateKeyFile()
	if err != nil {
		return nil
	}
	if k := loadStateKey(p); k != nil || !create {
		return k
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return nil
	}
	k := make([]byte, stateKeyLen)
	if _, err := rand.Read(k); err != nil {
		return nil
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return loadStateKey(p) // another rlab made it first
	}
	_, err = f.Write(k)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(p)
		return nil
	}
	return k
}

func loadStateKey(p string) []byte {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 != 0 || fi.Size() != stateKeyLen {
		return nil
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Geteuid() {
		return nil
	}
	k := make([]byte, stateKeyLen)
	if _, err := io.ReadFull(f, k); err != nil {
		return nil
	}
	return k
}

// pathsMAC is the HMAC of a host entry's paths (its jump hosts' included),
// bound to the run, the host's name and where it logs in (address, port,
// user, jump): a signed entry re-pointed at another host is unsigned (v1
// bound only the name, so an own run's key could be sent anywhere). It
// also vouches for the packages the run installed there.
func pathsMAC(key []byte, runID string, h Host) string {
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "rlab state paths v2\x00%s\x00", runID)
	for d, x := 0, &h; x != nil && d <= MaxJumpDepth; d, x = d+1, x.JumpHost {
		fmt.Fprintf(m, "%d\x00%q\x00%t\x00%q\x00%q\x00%q\x00%d\x00%q\x00%q\x00", d, x.Name, x.VM, x.IdentityFile, x.KnownHosts,
			x.Address, x.Port, x.User, x.Jump)
		// The bastions the host is reached through (none in a state.json
		// from before hops were recorded, which hashes as it did).
		for _, hop := range x.Hops {
			fmt.Fprintf(m, "hop\x00%q\x00%d\x00%q\x00", hop.Address, hop.Port, hop.User)
		}
	}
	// What the run installed there: down --remove-provisioned removes it
	// as root, so only as this user's rlab wrote it.
	if p := h.Provision; p != nil {
		fmt.Fprintf(m, "provision\x00%q\x00%q\x00", p.Family, p.Installed)
	}
	return hex.EncodeToString(m.Sum(nil))
}

// stateMAC is the HMAC of the whole state (its MAC field aside), as
// encoding/json writes it compactly: a decoded state.json encodes to the
// same bytes, so down checks what it decoded, every field it acts on
// included (become, the run ID, the effects, the agent's pid), not only
// the paths pathsMAC covers.
func stateMAC(key []byte, st State) (string, error) {
	st.MAC = ""
	b, err := json.Marshal(&st)
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, key)
	io.WriteString(m, "rlab state v1\x00")
	m.Write(b)
	return hex.EncodeToString(m.Sum(nil)), nil
}

// stateSigned says whether this user's rlab wrote st as it is.
func stateSigned(key []byte, st State) bool {
	if key == nil || st.MAC == "" {
		return false
	}
	want, err := stateMAC(key, st)
	return err == nil && hmac.Equal([]byte(want), []byte(st.MAC))
}

// signPaths sets every host's PathsMAC (a run's journal, never down's).
func signPaths(key []byte, st *State) {
	for i := range st.Hosts {
		st.Hosts[i].PathsMAC = pathsMAC(key, st.RunID, st.Hosts[i])
	}
}

// PathsSigned says whether h's paths were written by this user's rlab.
func PathsSigned(key []byte, runID string, h Host) bool {
	if key == nil || h.PathsMAC == "" {
		return false
	}
	want := pathsMAC(key, runID, h)
	return hmac.Equal([]byte(want), []byte(h.PathsMAC))
}

// ErrPath is a path of state.json down will not use.
var ErrPath = errors.New("state.json names a file down will not use")

// CheckPaths refuses a known_hosts or identity_file that h (or one of
// its bastions) names when its paths are not signed by this user's rlab,
// the file is outside the run directory dir, and the user does not name
// the same file (knownHosts, identities).
func CheckPaths(dir string, h Host, signed bool, knownHosts, identities []string) error {
	if signed {
		return nil
	}
	for d, x := 0, &h; x != nil && d <= MaxJumpDepth; d, x = d+1, x.JumpHost {
		who := fmt.Sprintf("host %q", h.Name)
		if x != &h {
			who = fmt.Sprintf("host %q (its bastion %q)", h.Name, x.Name)
		}
		for _, f := range []struct {
			field, path, flag string
			user              []string
		}{
			{"known_hosts", x.KnownHosts, "--known-hosts", knownHosts},
			{"identity_file", x.IdentityFile, "-i", identities},
		} {
			if f.path == "" || insideDir(dir, f.path) || sameFile(f.path, f.user) {
				continue
			}
			return fmt.Errorf("%s: %w: its %s %q is outside the run directory, and the run directory was not written by your rlab (or was changed since): a file a received state.json names is used only when you name it too: rlab down %s %s RUN (or remove %q from state.json to use your own)",
				who, ErrPath, f.field, f.path, f.flag, sshx.ExpandHome(f.path), f.field)
		}
	}
	return nil
}

// absPath is p as the connector opens it: ~ expanded, relative to the
// working directory.
func absPath(p string) (string, bool) {
	a, err := filepath.Abs(sshx.ExpandHome(p))
	return a, err == nil
}

// insideDir says whether p is a file inside dir, symlinks resolved.
func insideDir(dir, p string) bool {
	ap, ok := absPath(p)
	if !ok {
		return false
	}
	d, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	rd, err1 := filepath.EvalSymlinks(d)
	rp, err2 := filepath.EvalSymlinks(ap)
	if err1 != nil || err2 != nil {
		return false
	}
	r, err := filepath.Rel(rd, rp)
	return err == nil && filepath.IsLocal(r) && !strings.HasPrefix(r, "..")
}

// sameFile says whether p names one of files (as given, ~ expanded).
func sameFile(p string, files []string) bool {
	ap, ok := absPath(p)
	if !ok {
		return false
	}
	for _, f := range files {
		if af, ok := absPath(f); ok && af == ap {
			return true
		}
	}
	return false
}
