package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// checkOut is `rlab check -json` output.
type checkOut struct {
	Problems []struct {
		Host string `json:"host"`
		Code string `json:"code"`
	} `json:"problems"`
	Unreachable []string `json:"unreachable"`
}

// checkVerdict says whether one `rlab check` run reached and checked every
// host: exit 0 (all ready) or 1 (problems found), nothing unreachable. It
// returns how many hosts had a problem (all of them on a kernel without
// rdma_rxe) and why a run is not valid.
func checkVerdict(stdout []byte, exit, hosts int) (problemHosts int, why string) {
	var c checkOut
	jerr := json.Unmarshal(stdout, &c)
	switch {
	case jerr == nil && len(c.Unreachable) > 0:
		return 0, fmt.Sprintf("rlab check exit %d: %d hosts unreachable, first: %s", exit, len(c.Unreachable), c.Unreachable[0])
	case exit != 0 && exit != 1:
		return 0, fmt.Sprintf("rlab check exit %d", exit)
	case jerr != nil:
		return 0, fmt.Sprintf("rlab check -json output: %v", jerr)
	}
	seen := map[string]bool{}
	for _, p := range c.Problems {
		seen[p.Host] = true
	}
	if exit == 1 && len(seen) == 0 {
		return 0, "rlab check exit 1 without a problem"
	}
	if exit == 0 && len(c.Problems) > 0 {
		return len(seen), "rlab check exit 0 with problems"
	}
	if len(seen) > hosts {
		return len(seen), fmt.Sprintf("problems on %d hosts, the lab has %d", len(seen), hosts)
	}
	return len(seen), ""
}

// recap is one host's line of ansible-playbook's PLAY RECAP.
type recap struct {
	OK, Changed, Unreachable, Failed, Skipped, Rescued, Ignored int
}

var recapLine = regexp.MustCompile(`^(\S+)\s+:\s+((?:[a-z]+=\d+\s*)+)$`)

// parseRecap reads the PLAY RECAP section of ansible-playbook's output
// (default callback), by host.
func parseRecap(out string) (map[string]recap, error) {
	i := strings.LastIndex(out, "PLAY RECAP")
	if i < 0 {
		return nil, fmt.Errorf("no PLAY RECAP in ansible-playbook output")
	}
	m := map[string]recap{}
	for _, l := range strings.Split(out[i:], "\n")[1:] {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		g := recapLine.FindStringSubmatch(l)
		if g == nil {
			continue
		}
		var r recap
		for _, kv := range strings.Fields(g[2]) {
			k, v, _ := strings.Cut(kv, "=")
			n, err := strconv.Atoi(v)
			if err != nil {
				return nil, fmt.Errorf("recap line %q: %v", l, err)
			}
			switch k {
			case "ok":
				r.OK = n
			case "changed":
				r.Changed = n
			case "unreachable":
				r.Unreachable = n
			case "failed":
				r.Failed = n
			case "skipped":
				r.Skipped = n
			case "rescued":
				r.Rescued = n
			case "ignored":
				r.Ignored = n
			}
		}
		m[g[1]] = r
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("PLAY RECAP lists no host")
	}
	return m, nil
}

// playVerdict says whether one playbook run reached and checked every host:
// each in the recap, none unreachable or failed, and each host's three tasks
// done (the preflight assertion either passed or failed and was ignored).
// It returns how many hosts the copy changed (shipped to) and why a run is
// not valid.
func playVerdict(stdout string, exit int, hosts []string) (changed int, why string) {
	rc, err := parseRecap(stdout)
	if err != nil {
		return 0, fmt.Sprintf("ansible-playbook exit %d: %v", exit, err)
	}
	var bad []string
	for _, h := range hosts {
		r, ok := rc[h]
		switch {
		case !ok:
			bad = append(bad, h+": not in the recap")
		case r.Unreachable > 0 || r.Failed > 0:
			bad = append(bad, fmt.Sprintf("%s: unreachable=%d failed=%d", h, r.Unreachable, r.Failed))
		case r.OK < 3: // an ignored failure counts as ok too
			bad = append(bad, fmt.Sprintf("%s: ok=%d, want the 3 tasks done", h, r.OK))
		}
		changed += min(r.Changed, 1)
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return changed, fmt.Sprintf("%d of %d hosts not done, first: %s", len(bad), len(hosts), bad[0])
	}
	if exit != 0 {
		return changed, fmt.Sprintf("ansible-playbook exit %d with every host done", exit)
	}
	return changed, ""
}

// parseHosts reads -hosts: host counts, comma-separated, each ≥ 1.
func parseHosts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-hosts: %q is not a host count", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// parseRoundsFor reads -rounds-for: "N=R,..." (R rounds for N hosts instead
// of -rounds).
func parseRoundsFor(s string) (map[int]int, error) {
	m := map[int]int{}
	if strings.TrimSpace(s) == "" {
		return m, nil
	}
	for _, f := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(f), "=")
		n, err1 := strconv.Atoi(k)
		r, err2 := strconv.Atoi(v)
		if !ok || err1 != nil || err2 != nil || n < 1 || r < 1 {
			return nil, fmt.Errorf("-rounds-for: %q is not HOSTS=ROUNDS", f)
		}
		m[n] = r
	}
	return m, nil
}
