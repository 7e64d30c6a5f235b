package lab

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// authorizedKeysOptions are the bare option words of sshd's authorized_keys
// format (sshd(8), AUTHORIZED_KEYS FILE FORMAT; matched case-insensitively
// as sshd does). Each is also a well-formed host name, so checkAddress lets
// it through; but a host address ends up at the start of a known_hosts
// line, and a line that begins with one of these words is a valid
// authorized_keys entry: refused, so no lab can make rlab write one.
var authorizedKeysOptions = map[string]bool{
	"agent-forwarding": true, "cert-authority": true, "no-agent-forwarding": true,
	"no-port-forwarding": true, "no-pty": true, "no-user-rc": true, "no-x11-forwarding": true,
	"port-forwarding": true, "pty": true, "no-touch-required": true, "verify-required": true,
	"restrict": true, "user-rc": true, "x11-forwarding": true,
}

// checkSSHAddress returns why s cannot be a host's SSH address, or "": it
// must be an IP address or a DNS name (checkAddress) and not one of the
// words that would make a known_hosts line an authorized_keys entry.
func checkSSHAddress(s string) string {
	if msg := checkAddress(s); msg != "" {
		return msg
	}
	if authorizedKeysOptions[strings.ToLower(s)] {
		return fmt.Sprintf("%q is an authorized_keys option word, not a host to reach; write the host's full DNS name or its IP address.", s)
	}
	return ""
}

// checkJumpSpec returns why a jump string ("[user@]host[:port][,...]", as
// ssh -J takes it) is not one, or "": every hop's host is checked as an
// address (checkSSHAddress), its port as 1-65535, and its user may hold no
// whitespace, control characters or commas.
func checkJumpSpec(spec string) string {
	for _, hop := range strings.Split(spec, ",") {
		hop = strings.TrimPrefix(strings.TrimSpace(hop), "ssh://")
		if hop == "" {
			return fmt.Sprintf("%q has an empty hop; hops are \"user@host:port\", separated by commas.", spec)
		}
		if i := strings.LastIndex(hop, "@"); i >= 0 {
			user := hop[:i]
			if user == "" || strings.ContainsFunc(user, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
				return fmt.Sprintf("Jump hop %q has an empty user or one with spaces or control characters; write \"user@host:port\".", hop)
			}
			hop = hop[i+1:]
		}
		host := hop
		if strings.HasPrefix(hop, "[") {
			end := strings.Index(hop, "]")
			if end < 0 {
				return fmt.Sprintf("Jump hop %q opens a bracket it does not close; write an IPv6 hop as \"[2001:db8::1]:22\".", hop)
			}
			host = hop[1:end]
			if rest := hop[end+1:]; rest != "" {
				p, ok := strings.CutPrefix(rest, ":")
				if msg := checkJumpPort(hop, p); !ok || msg != "" {
					return fmt.Sprintf("Jump hop %q: write an IPv6 hop as \"[2001:db8::1]:22\".", hop)
				}
			}
		} else if h, p, ok := strings.Cut(hop, ":"); ok && !strings.Contains(p, ":") {
			if msg := checkJumpPort(hop, p); msg != "" {
				return msg
			}
			host = h
		}
		if msg := checkSSHAddress(host); msg != "" {
			return fmt.Sprintf("Jump hop %q: %s", hop, msg)
		}
	}
	return ""
}

func checkJumpPort(hop, p string) string {
	if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
		return fmt.Sprintf("Jump hop %q has port %q; a port is a number from 1 to 65535.", hop, p)
	}
	return ""
}

// checkJump reports a jump string that is not one, at its expression.
func (l *loader) checkJump(a *hcl.Attribute, spec string) {
	if msg := checkJumpSpec(spec); msg != "" {
		l.errorf(a.Expr.Range().Ptr(), "Invalid jump", "%s", msg)
	}
}
