package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rlab-dev/rlab/engine/lab"
)

// selectHosts is the lab limited to the hosts --host names (`rlab facts
// --host`): each value is a host's name (`server["ana"]`) or its block
// label (every instance: `server`), values comma-separated or repeated. A
// selected host's jump hosts are still dialed through (its target carries
// them), not gathered. No values: the lab as it is.
func selectHosts(l *lab.Lab, values []string) (*lab.Lab, error) {
	var names []string
	for _, v := range values {
		for _, n := range strings.Split(v, ",") {
			if n = strings.TrimSpace(n); n != "" {
				names = append(names, n)
			}
		}
	}
	if len(names) == 0 {
		return l, nil
	}
	want := map[*lab.Host]bool{}
	for _, n := range names {
		found := false
		for _, h := range l.Hosts {
			if h.Name == n || h.Block == n {
				want[h], found = true, true
			}
		}
		if !found {
			return nil, withCode(exitFail, unknownHost(l, n))
		}
	}
	sub := *l
	sub.Hosts = nil
	for _, h := range l.Hosts {
		if want[h] {
			sub.Hosts = append(sub.Hosts, h)
		}
	}
	return &sub, nil
}

// unknownHost says a --host value names no host, with a did-you-mean and
// the lab's hosts.
func unknownHost(l *lab.Lab, v string) error {
	var all, near []string
	seen := map[string]bool{}
	for _, h := range l.Hosts {
		for _, n := range []string{h.Block, h.Name} {
			if seen[n] {
				continue
			}
			seen[n] = true
			all = append(all, n)
			if d := lab.EditDistance(strings.ToLower(v), strings.ToLower(n)); d <= min(len(v)/3, 3) || strings.EqualFold(v, n) {
				near = append(near, strconv.Quote(n))
			}
		}
	}
	if len(near) > 5 {
		near = near[:5]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "--host %q: lab %q has no host of that name", v, l.Name)
	if len(near) > 0 {
		fmt.Fprintf(&b, "; did you mean %s?", strings.Join(near, " or "))
	}
	if len(all) > 10 {
		all = append(all[:10], fmt.Sprintf("and %d more", len(all)-10))
	}
	fmt.Fprintf(&b, " (hosts: %s)", strings.Join(all, ", "))
	return fmt.Errorf("%s", b.String())
}
