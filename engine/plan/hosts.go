package plan

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rlab-dev/rlab/engine/lab"
)

// Hop is one bastion of a host's jump string ("[user@]host[:port][,...]"):
// parsed once, here, so the run connects through what the plan shows.
// User "" is the host's own user (unless the user's ssh config says
// otherwise); Port 0 is the default. A run's state.json records a host's
// hops as they are (engine/runstate Host.Hops), so `rlab down` goes through
// the same bastions without parsing the string again.
type Hop struct {
	User    string `json:"user,omitempty"`
	Address string `json:"address"`
	Port    int    `json:"port,omitempty"`
}

// ParseJump parses a jump string into its hops, the first the one dialled
// first; "" and "none" have none. It reads a spec as engine/sshx's
// ParseJump does (a test in engine/run holds the two equal) and, unlike
// it, is pure: the plan may not import the SSH layer.
func ParseJump(spec string) ([]Hop, error) {
	if spec == "" || spec == "none" {
		return nil, nil
	}
	var hops []Hop
	for _, hop := range strings.Split(spec, ",") {
		hop = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(hop), "ssh://"))
		if hop == "" {
			return nil, fmt.Errorf("jump %q: empty hop", spec)
		}
		var h Hop
		if i := strings.LastIndex(hop, "@"); i >= 0 {
			h.User, hop = hop[:i], hop[i+1:]
		}
		host, port := hop, ""
		if hh, p, ok := splitHostPort(hop); ok {
			host, port = hh, p
		}
		if host == "" || strings.ContainsAny(host, " \t/") {
			return nil, fmt.Errorf("jump %q: bad host %q", spec, host)
		}
		h.Address = host
		if port != "" {
			n, err := strconv.Atoi(port)
			if err != nil || n <= 0 || n > 65535 {
				return nil, fmt.Errorf("jump %q: bad port %q", spec, port)
			}
			h.Port = n
		}
		hops = append(hops, h)
	}
	return hops, nil
}

// splitHostPort is net.SplitHostPort's success case (the plan imports no
// net): "host:port" or "[v6]:port"; ok false where it returns an error.
func splitHostPort(hostport string) (host, port string, ok bool) {
	j, k := 0, 0
	i := strings.LastIndexByte(hostport, ':')
	if i < 0 {
		return "", "", false
	}
	if hostport[0] == '[' {
		end := strings.IndexByte(hostport, ']')
		if end < 0 || end+1 != i {
			return "", "", false
		}
		host = hostport[1:end]
		j, k = 1, end+1
	} else {
		host = hostport[:i]
		if strings.IndexByte(host, ':') >= 0 {
			return "", "", false
		}
	}
	if strings.IndexByte(hostport[j:], '[') >= 0 || strings.IndexByte(hostport[k:], ']') >= 0 {
		return "", "", false
	}
	return host, hostport[i+1:], true
}

// resolveJumps fills each planned host's Hops (its jump string parsed) or
// Via (the lab host it jumps through, planned too): the run connects
// through these and parses nothing. A jump string that is not one is an
// error now, at plan time, not at connect.
func (b *builder) resolveJumps() error {
	for _, hp := range b.p.Hosts {
		if err := hp.resolveJump(func(j *lab.Host) *HostPlan { return b.hosts[j] }); err != nil {
			return err
		}
	}
	return nil
}

func (hp *HostPlan) resolveJump(via func(*lab.Host) *HostPlan) error {
	h := hp.Ref
	if h.JumpHost != nil {
		if hp.Via = via(h.JumpHost); hp.Via == nil {
			return fmt.Errorf("plan host %q: its jump host %q is not planned", h.Name, h.JumpHost.Name)
		}
		return nil
	}
	hops, err := ParseJump(h.Jump)
	if err != nil {
		return fmt.Errorf("plan host %q: %w", h.Name, err)
	}
	hp.Hops = hops
	return nil
}

// HostOf resolves lab host h as a plan does, for the commands that reach
// hosts without one (facts, check, down): its jump string parsed, the lab
// hosts it jumps through resolved in turn.
func HostOf(h *lab.Host) (*HostPlan, error) {
	return hostOf(h, 0)
}

// maxVia bounds a chain of lab hosts as bastions (the lab loader refuses a
// cycle; a lab built by hand may hold one).
const maxVia = 8

func hostOf(h *lab.Host, depth int) (*HostPlan, error) {
	hp := newHostPlan(h)
	var viaErr error
	err := hp.resolveJump(func(j *lab.Host) *HostPlan {
		if depth >= maxVia {
			return nil
		}
		jp, e := hostOf(j, depth+1)
		viaErr = e
		return jp
	})
	if viaErr != nil {
		return hp, viaErr
	}
	return hp, err
}

// newHostPlan is lab host h as a plan shows it, its jump not resolved yet.
func newHostPlan(h *lab.Host) *HostPlan {
	return &HostPlan{Ref: h, Name: h.Name, Slug: h.Slug, Address: h.Address, User: h.User, Port: h.Port, Jump: h.Jump, VM: h.VM != nil}
}

// HostOf is the plan of lab host h (nil when the plan does not connect
// to it).
func (p *Plan) HostOf(h *lab.Host) *HostPlan {
	for _, hp := range p.Hosts {
		if hp.Ref == h {
			return hp
		}
	}
	return nil
}
