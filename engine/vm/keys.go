package vm

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"os"

	"golang.org/x/crypto/ssh"
)

// keyPair is an ed25519 key rlab made: the guest's host key, or the run's
// login key.
type keyPair struct {
	private []byte // OpenSSH PEM
	public  ssh.PublicKey
	signer  ssh.Signer
}

func newKeyPair(comment string) (*keyPair, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate ed25519 key: %w", err)
	}
	block, err := ssh.MarshalPrivateKey(priv, comment)
	if err != nil {
		return nil, fmt.Errorf("marshal ed25519 key: %w", err)
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		return nil, err
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return nil, err
	}
	return &keyPair{private: pem.EncodeToMemory(block), public: sp, signer: signer}, nil
}

// authorizedLine is the public key in authorized_keys / .pub form.
func (k *keyPair) authorizedLine() []byte { return ssh.MarshalAuthorizedKey(k.public) }

// writeFiles writes path (0600) and path.pub (0644).
func (k *keyPair) writeFiles(path string) error {
	if err := os.WriteFile(path, k.private, 0o600); err != nil {
		return err
	}
	return os.WriteFile(path+".pub", k.authorizedLine(), 0o644)
}

// loadKeyPair reads a key written by writeFiles.
func loadKeyPair(path string) (*keyPair, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	signer, err := ssh.ParsePrivateKey(b)
	if err != nil {
		return nil, fmt.Errorf("parse key %s: %w", path, err)
	}
	return &keyPair{private: b, public: signer.PublicKey(), signer: signer}, nil
}
