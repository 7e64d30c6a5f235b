package sshx

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// maxIdentityBytes caps an identity file: an OpenSSH private key is a few
// KiB (16384-bit RSA about 13); a lab's identity_file = "/dev/zero" or a
// huge file must give an error, not exhaust memory.
const maxIdentityBytes = 1 << 20

// auth holds the signers of a run: ssh-agent keys first, then identity
// files, each file read and parsed once however many hosts use it. The agent
// connection is only ever used to sign; it is never forwarded.
type auth struct {
	agentSock string

	mu        sync.Mutex
	agentDone bool
	agentKeys []ssh.Signer
	agentErr  error
	files     map[string]fileSigner
}

type fileSigner struct {
	signer ssh.Signer
	note   string // why the file gave no key (encrypted, unreadable)
}

func (a *auth) agentSigners() ([]ssh.Signer, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.agentDone {
		return a.agentKeys, a.agentErr
	}
	a.agentDone = true
	if a.agentSock == "" {
		return nil, nil
	}
	conn, err := net.Dial("unix", a.agentSock)
	if err != nil {
		a.agentErr = fmt.Errorf("ssh-agent at SSH_AUTH_SOCK: %w", err)
		return nil, a.agentErr
	}
	// The connection stays open for the run: signing needs it.
	keys, err := agent.NewClient(conn).Signers()
	if err != nil {
		conn.Close()
		a.agentErr = fmt.Errorf("ssh-agent: list keys: %w", err)
		return nil, a.agentErr
	}
	a.agentKeys = keys
	return keys, nil
}

func (a *auth) fileSigner(path string) fileSigner {
	a.mu.Lock()
	defer a.mu.Unlock()
	if fs, ok := a.files[path]; ok {
		return fs
	}
	var fs fileSigner
	b, err := readCapped(path, maxIdentityBytes, "identity file")
	if err != nil {
		fs.note = err.Error()
	} else if s, err := ssh.ParsePrivateKey(b); err != nil {
		var pm *ssh.PassphraseMissingError
		if errors.As(err, &pm) {
			fs.note = fmt.Sprintf("identity file %s is encrypted with a passphrase, which rlab never asks for: load it into ssh-agent (ssh-add %s) and make sure SSH_AUTH_SOCK is set", path, path)
		} else {
			fs.note = fmt.Sprintf("identity file %s: %v", path, err)
		}
	} else {
		fs.signer = s
	}
	if a.files == nil {
		a.files = map[string]fileSigner{}
	}
	a.files[path] = fs
	return fs
}

// methods returns the auth methods for one host and the notes to add to an
// authentication failure.
func (a *auth) methods(identities []string, identitiesOnly bool) ([]ssh.AuthMethod, []string, error) {
	signers, notes, err := a.signers(identities, identitiesOnly)
	if err != nil {
		return nil, notes, err
	}
	return []ssh.AuthMethod{ssh.PublicKeys(signers...)}, notes, nil
}

// signers are the keys offered to one host, in order: ssh-agent's, then
// the identity files'. With identitiesOnly (ssh config's IdentitiesOnly
// yes, as OpenSSH) only the identity files' keys are offered: an agent key
// is kept only when it is one of them (an encrypted file's key that
// ssh-add loaded, known by the file's public key, FILE.pub), so a host
// does not learn every key the user's agent holds (each one offered is
// shown to the host, which can tie the user to accounts elsewhere).
func (a *auth) signers(identities []string, identitiesOnly bool) ([]ssh.Signer, []string, error) {
	var signers []ssh.Signer
	var notes []string
	ak, err := a.agentSigners()
	if err != nil {
		notes = append(notes, err.Error())
	}
	if identitiesOnly && len(ak) > 0 {
		want := map[string]bool{}
		for _, p := range identities {
			if pk := a.identityPublicKey(p); pk != nil {
				want[string(pk.Marshal())] = true
			}
		}
		var kept []ssh.Signer
		for _, k := range ak {
			if want[string(k.PublicKey().Marshal())] {
				kept = append(kept, k)
			}
		}
		notes = append(notes, fmt.Sprintf("IdentitiesOnly: %d of ssh-agent's %d key(s) are identity files' and offered", len(kept), len(ak)))
		ak = kept
	}
	signers = append(signers, ak...)
	if a.agentSock == "" {
		notes = append(notes, "SSH_AUTH_SOCK is not set (no ssh-agent)")
	} else if err == nil && !identitiesOnly {
		notes = append(notes, fmt.Sprintf("ssh-agent offered %d key(s)", len(ak)))
	}
	for _, p := range identities {
		fs := a.fileSigner(p)
		if fs.signer != nil {
			signers = append(signers, fs.signer)
			notes = append(notes, "tried identity file "+p)
		} else {
			notes = append(notes, fs.note)
		}
	}
	if len(signers) == 0 {
		return nil, notes, fmt.Errorf("no SSH key to log in with: %s", strings.Join(notes, "; "))
	}
	return signers, notes, nil
}

// identityPublicKey is the public key of identity file path: its private
// key's, or, for one rlab cannot read (encrypted), that of path.pub; nil
// when neither gives one.
func (a *auth) identityPublicKey(path string) ssh.PublicKey {
	if fs := a.fileSigner(path); fs.signer != nil {
		return fs.signer.PublicKey()
	}
	b, err := readCapped(path+".pub", maxIdentityBytes, "public key file")
	if err != nil {
		return nil
	}
	pk, _, _, _, err := ssh.ParseAuthorizedKey(b)
	if err != nil {
		return nil
	}
	return pk
}
