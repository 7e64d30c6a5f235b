package server

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/rlab-dev/rlab/agent/proto"
)

// Link impairments: the kernel's netem qdisc as the root qdisc of a netdev,
// set and removed over netlink (never by running tc). The agent puts its
// netem under its own handle, impairHandle, and:
//   - refuses a netdev whose root qdisc someone else set up (any root qdisc
//     with a handle other than 0:, the kernel's default, or rlab's), rather
//     than replace and lose it;
//   - replaces a netem of its own (a sweep's next point, or one a lost
//     agent left);
//   - removes only a netem under its own handle, which gives the netdev its
//     kernel default qdisc back;
//   - removes every netem it set when its controller releases it or goes
//     away (cleanup), as it deletes its rxe devices;
//   - while a netem that drops, duplicates, corrupts or reorders packets is
//     in force, sends each packet on its own (gso_max_segs 1) and gives
//     the netdev its own gso_max_segs back with the netem's removal.
//
// netem acts on what the stack hands the qdisc, and with GSO a TCP sender
// hands it bursts of up to 64 KiB as one skb: "loss 1%" then drops 1 % of
// the bursts, far fewer than 1 % of the packets, while rxe's UDP packets
// (no GSO) lose 1 % each. Measured in make test-vm's lossy lab: 7.8 MB of
// TCP at "1 %" lost not one packet in one run (tcpi_total_retrans 0), and
// 68–284 resent segments in others, a handful of bursts each. netem's
// own segmentation of GSO skbs happens only for corrupt
// (linux net/sched/sch_netem.c). gso_max_segs is read by a socket when it
// connects, so it is set before the point's workload starts, as the impair
// step is.

// impairHandle is the handle of rlab's netem root qdisc ("524c:", "RL").
var impairHandle = netlink.MakeHandle(0x524c, 0)

// impairs is what netem this agent set: netdev -> impair id, and the
// gso_max_segs each netdev had when this agent first put a netem on it.
type impairs struct {
	mu  sync.Mutex
	m   map[string]string
	gso map[string]uint32
}

func (s *Server) impairApply(ctx context.Context, c *call, params json.RawMessage) (any, error) {
	var p proto.ImpairParams
	if err := decode(proto.MethodImpairApply, params, &p); err != nil {
		return nil, err
	}
	s.mu.Lock()
	closing := s.closing
	s.mu.Unlock()
	if closing {
		return nil, errClosing(proto.MethodImpairApply)
	}
	if err := checkImpairParams(p); err != nil {
		return nil, err
	}
	if moduleState(kernelRelease(), "sch_netem", "CONFIG_NET_SCH_NETEM") == "loadable" {
		// The kernel would load it on request too, where modprobe is
		// where it looks; loading it first makes a failure say why.
		if err := modprobe(ctx, "sch_netem"); err != nil {
			return nil, err
		}
	}
	s.imp.mu.Lock()
	own := s.imp.gso[p.Netdev]
	s.imp.mu.Unlock()
	res, own, err := applyNetem(&netlink.Handle{}, p, own)
	if err != nil {
		return nil, err
	}
	s.imp.mu.Lock()
	if s.imp.m == nil {
		s.imp.m, s.imp.gso = map[string]string{}, map[string]uint32{}
	}
	s.imp.m[p.Netdev] = p.ID
	s.imp.gso[p.Netdev] = own
	s.imp.mu.Unlock()
	res.GSOOwn = own
	s.log.Info("impair applied", "id", p.ID, "netdev", p.Netdev, "netem", res.Netem, "gso", res.GSO)
	return res, nil
}

func (s *Server) impairRemove(ctx context.Context, c *call, params json.RawMessage) (any, error) {
	var p proto.ImpairRemoveParams
	if err := decode(proto.MethodImpairRemove, params, &p); err != nil {
		return nil, err
	}
	s.imp.mu.Lock()
	was := s.imp.gso[p.Netdev]
	s.imp.mu.Unlock()
	res, err := removeNetem(&netlink.Handle{}, p.Netdev, was, p.GSOOwn)
	if err != nil {
		return nil, err
	}
	s.imp.mu.Lock()
	delete(s.imp.m, p.Netdev)
	delete(s.imp.gso, p.Netdev)
	s.imp.mu.Unlock()
	return res, nil
}

// removeImpairs removes every netem this agent set (cleanup), returning the
// netdevs it cleared and the errors.
func (s *Server) removeImpairs() (removed, errs []string) {
	s.imp.mu.Lock()
	netdevs := make([]string, 0, len(s.imp.m))
	for nd := range s.imp.m {
		netdevs = append(netdevs, nd)
	}
	s.imp.mu.Unlock()
	sort.Strings(netdevs)
	for _, nd := range netdevs {
		s.imp.mu.Lock()
		was := s.imp.gso[nd]
		s.imp.mu.Unlock()
		if _, err := removeNetem(&netlink.Handle{}, nd, was, 0); err != nil {
			errs = append(errs, err.Error())
			continue
		}
		s.imp.mu.Lock()
		delete(s.imp.m, nd)
		delete(s.imp.gso, nd)
		s.imp.mu.Unlock()
		removed = append(removed, nd)
	}
	return removed, errs
}

// modprobe loads a kernel module (argv only); without root the error says
// the host needs become.
func modprobe(ctx context.Context, module string) error {
	what := "load kernel module " + module
	mp, err := lookTool("modprobe")
	if err != nil {
		return perr(proto.CodeUnsupported, "%s: %v (install kmod)", what, err)
	}
	argv := []string{mp, module}
	out, code, err := runArgv(ctx, argv)
	if err != nil {
		pe := &proto.Error{Code: proto.CodeCommand, Message: fmt.Sprintf("%s: %v", what, err), Command: argv, ExitCode: code, Stderr: out}
		if os.Geteuid() != 0 {
			pe.Code = proto.CodePermission
			pe.Message += ": needs root (become = true)"
		}
		return pe
	}
	return nil
}

// netemAttrs turns the wire parameters into netlink's.
func netemAttrs(p proto.ImpairParams) netlink.NetemQdiscAttrs {
	return netlink.NetemQdiscAttrs{
		Latency:     p.DelayUs,
		Jitter:      p.JitterUs,
		Loss:        float32(p.Loss),
		Duplicate:   float32(p.Duplicate),
		ReorderProb: float32(p.Reorder),
		CorruptProb: float32(p.Corrupt),
		Rate64:      p.RateBytes,
	}
}

// checkImpairParams refuses what netem would take wrongly rather than
// refuse: the lab checks these too, but the agent is a boundary of its own.
func checkImpairParams(p proto.ImpairParams) error {
	if !validIfname(p.Netdev) {
		return perr(proto.CodeBadRequest, "impair: %q is not a netdev name", p.Netdev)
	}
	for _, v := range []struct {
		name string
		v    float64
	}{{"loss", p.Loss}, {"duplicate", p.Duplicate}, {"reorder", p.Reorder}, {"corrupt", p.Corrupt}} {
		if !(v.v >= 0 && v.v <= 100) {
			return perr(proto.CodeBadRequest, "impair %s: %s %v%% is not within 0..100", p.Netdev, v.name, v.v)
		}
	}
	if p.JitterUs > 0 && p.DelayUs == 0 {
		return perr(proto.CodeBadRequest, "impair %s: jitter needs a delay", p.Netdev)
	}
	if p.Reorder > 0 && p.DelayUs == 0 {
		return perr(proto.CodeBadRequest, "impair %s: reorder needs a delay", p.Netdev)
	}
	return nil
}

func validIfname(s string) bool {
	if len(s) == 0 || len(s) > 15 || s == "." || s == ".." {
		return false
	}
	return !strings.ContainsAny(s, "/: \t\n\x00")
}

// rootQdisc returns the root qdisc of link, or nil.
func rootQdisc(h *netlink.Handle, link netlink.Link) (netlink.Qdisc, error) {
	qs, err := h.QdiscList(link)
	if err != nil {
		return nil, err
	}
	for _, q := range qs {
		if q.Attrs().Parent == netlink.HANDLE_ROOT {
			return q, nil
		}
	}
	return nil, nil
}

func handleText(h uint32) string {
	major, minor := netlink.MajorMinor(h)
	if minor == 0 {
		return fmt.Sprintf("%x:", major)
	}
	return fmt.Sprintf("%x:%x", major, minor)
}

func netlinkErr(what string, err error) error {
	switch {
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES):
		return perr(proto.CodePermission, "%s: %v: needs root (become = true)", what, err)
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.EOPNOTSUPP):
		// The kernel answers ENOENT when it has no qdisc of that kind and
		// cannot load its module.
		return perr(proto.CodeUnsupported, "%s: %v: the kernel has no netem qdisc (sch_netem; CONFIG_NET_SCH_NETEM)", what, err)
	}
	return perr(proto.CodeCommand, "%s: %v", what, err)
}

// applyNetem puts netem with p's parameters as link's root qdisc, unless a
// root qdisc rlab did not set is there. own is the netdev's gso_max_segs
// as this agent first found it (0: not yet touched); the value to give
// back at removal is returned with the result (setGSO).
func applyNetem(h *netlink.Handle, p proto.ImpairParams, own uint32) (*proto.ImpairResult, uint32, error) {
	was := own
	if err := checkImpairParams(p); err != nil {
		return nil, was, err
	}
	what := fmt.Sprintf("impair %s: netem on %s", p.ID, p.Netdev)
	link, err := h.LinkByName(p.Netdev)
	if err != nil {
		return nil, was, perr(proto.CodeNotFound, "%s: netdev %s: %v", what, p.Netdev, err)
	}
	root, err := rootQdisc(h, link)
	if err != nil {
		return nil, was, netlinkErr(what+": list qdiscs", err)
	}
	if root != nil && root.Attrs().Handle != 0 && root.Attrs().Handle != impairHandle {
		return nil, was, perr(proto.CodeQdiscBusy, "%s: netdev %s already has a root qdisc %s %s that rlab did not set; rlab does not replace it. Remove it (tc qdisc del dev %s root) or impair another netdev",
			what, p.Netdev, root.Type(), handleText(root.Attrs().Handle), p.Netdev)
	}
	q := netlink.NewNetem(netlink.QdiscAttrs{LinkIndex: link.Attrs().Index, Handle: impairHandle, Parent: netlink.HANDLE_ROOT}, netemAttrs(p))
	if err := h.QdiscReplace(q); err != nil {
		return nil, was, netlinkErr(what, err)
	}
	ours := root != nil && root.Attrs().Handle == impairHandle
	gso, was := setGSO(h, link, perPacket(p), ours, own)
	res, err := readRoot(h, link, p.Netdev)
	if err != nil {
		return nil, was, err
	}
	res.GSO = gso
	return res, was, nil
}

// perPacket reports whether p has netem decide packet by packet (loss,
// duplicate, corrupt, reorder), which GSO bursts would make per burst.
func perPacket(p proto.ImpairParams) bool {
	return p.PerPacket || p.Loss > 0 || p.Duplicate > 0 || p.Corrupt > 0 || p.Reorder > 0
}

// setGSO gives link gso_max_segs 1 while a per-packet netem is in force,
// and its own value back when the next netem is not per-packet. ours: the
// netem replaced was rlab's; own: the netdev's own value as this agent
// first found it (0: this agent has not touched the netdev yet). It
// returns what to say of GSO in the result and the netdev's own value, to
// give back at removal. A kernel that will not set it (older ones set
// gso_max_segs only when a link is made) keeps GSO, and the result says
// so: the loss is then per burst.
func setGSO(h *netlink.Handle, link netlink.Link, perPacket, ours bool, own uint32) (string, uint32) {
	cur := link.Attrs().GSOMaxSegs
	if own == 0 {
		own = cur
		if ours && cur == 1 {
			// rlab's netem, left by an agent that is gone, lowered it:
			// the netdev's own value is the kernel's default.
			own = defaultGSOSegs(link)
		}
	}
	lowered := fmt.Sprintf("gso_max_segs 1 (was %d): each packet on its own while netem decides per packet", own)
	if own == 1 {
		lowered = "gso_max_segs 1 (the netdev's own)"
	}
	want := own
	if perPacket {
		want = 1
	}
	if cur == want {
		if perPacket {
			return lowered, own
		}
		return "", own
	}
	if err := h.LinkSetGSOMaxSegs(link, int(want)); err != nil {
		if perPacket {
			return fmt.Sprintf("gso_max_segs %d kept (the kernel refused 1: %v): netem decides per GSO burst of up to %d packets, not per packet", cur, err, cur), own
		}
		return fmt.Sprintf("gso_max_segs %d: give back %d: %v", cur, own, err), own
	}
	if perPacket {
		return lowered, own
	}
	return fmt.Sprintf("gso_max_segs %d again", own), own
}

// defaultGSOSegs is the gso_max_segs a netdev has from the kernel: 65535
// (GSO_MAX_SEGS), or its driver's lower TSO limit.
func defaultGSOSegs(link netlink.Link) uint32 {
	if t := link.Attrs().TSOMaxSegs; t > 0 && t < 65535 {
		return t
	}
	return 65535
}

// leftGSOSegs is the gso_max_segs to give back to link, found with rlab's
// netem and gso_max_segs 1 by an agent that did not set them (the run's was
// killed: `rlab down`): journaled, the netdev's own value as the run's agent
// reported it (ImpairResult.GSOOwn), when it is one the kernel gives a
// netdev (1 to defaultGSOSegs); else the kernel's default. The default
// alone undid a lower value an admin had set (attack rounds 13, 14).
func leftGSOSegs(link netlink.Link, journaled uint32) uint32 {
	if def := defaultGSOSegs(link); journaled >= 1 && journaled <= def {
		return journaled
	}
	return defaultGSOSegs(link)
}

// removeNetem deletes link's root qdisc if it is rlab's netem; anything
// else is left alone (Removed false). With it, the netdev gets back its own
// gso_max_segs, was (0: unknown to this agent; a netem of rlab's left by an
// agent that is gone, with gso_max_segs 1, gives back leftGSOSegs of the
// value that agent reported, journaled, else the kernel's default).
func removeNetem(h *netlink.Handle, netdev string, was, journaled uint32) (*proto.ImpairResult, error) {
	what := fmt.Sprintf("remove impairment from %s", netdev)
	link, err := h.LinkByName(netdev)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return &proto.ImpairResult{Netdev: netdev}, nil // gone with its netdev
		}
		return nil, perr(proto.CodeNotFound, "%s: %v", what, err)
	}
	root, err := rootQdisc(h, link)
	if err != nil {
		return nil, netlinkErr(what+": list qdiscs", err)
	}
	removed := false
	if root != nil && root.Type() == "netem" && root.Attrs().Handle == impairHandle {
		if err := h.QdiscDel(root); err != nil && !errors.Is(err, unix.ENOENT) {
			return nil, netlinkErr(what, err)
		}
		removed = true
		if was == 0 && link.Attrs().GSOMaxSegs == 1 {
			was = leftGSOSegs(link, journaled)
		}
	}
	gso := ""
	if was != 0 && link.Attrs().GSOMaxSegs != was {
		if err := h.LinkSetGSOMaxSegs(link, int(was)); err != nil {
			return nil, netlinkErr(fmt.Sprintf("%s: give gso_max_segs %d back", what, was), err)
		}
		gso = fmt.Sprintf("gso_max_segs %d again", was)
	}
	res, err := readRoot(h, link, netdev)
	if err != nil {
		return nil, err
	}
	res.Removed, res.GSO = removed, gso
	return res, nil
}

// readRoot reads back the root qdisc, so what the run records is the
// kernel's word, not the request.
func readRoot(h *netlink.Handle, link netlink.Link, netdev string) (*proto.ImpairResult, error) {
	root, err := rootQdisc(h, link)
	if err != nil {
		return nil, netlinkErr("read back the root qdisc of "+netdev, err)
	}
	res := &proto.ImpairResult{Netdev: netdev}
	if root == nil {
		return res, nil
	}
	res.Qdisc, res.Handle = root.Type(), handleText(root.Attrs().Handle)
	if n, ok := root.(*netlink.Netem); ok {
		res.Netem = netemText(n)
	}
	return res, nil
}

// netemText writes netem's parameters as read from the kernel, in tc's
// words: probabilities are fractions of 2^32-1.
func netemText(n *netlink.Netem) string {
	pct := func(u uint32) string {
		return strconv.FormatFloat(float64(u)*100/float64(^uint32(0)), 'g', 4, 64) + "%"
	}
	var parts []string
	parts = append(parts, "loss "+pct(n.Loss))
	if n.Latency > 0 {
		parts = append(parts, fmt.Sprintf("latency %d ticks", n.Latency))
	}
	if n.Jitter > 0 {
		parts = append(parts, fmt.Sprintf("jitter %d ticks", n.Jitter))
	}
	if n.Duplicate > 0 {
		parts = append(parts, "duplicate "+pct(n.Duplicate))
	}
	if n.ReorderProb > 0 {
		parts = append(parts, "reorder "+pct(n.ReorderProb))
	}
	if n.CorruptProb > 0 {
		parts = append(parts, "corrupt "+pct(n.CorruptProb))
	}
	if n.Rate64 > 0 {
		// Rate64 is bytes per second in 64 bits: in bits it may need more.
		parts = append(parts, "rate "+new(big.Int).Lsh(new(big.Int).SetUint64(n.Rate64), 3).String()+"bit")
	}
	return strings.Join(parts, " ")
}

// moduleState says whether the running kernel has a module: "loaded",
// "builtin", "loadable" (a module file exists for it), "absent" (the
// kernel's module lists or config say so), or "unknown" (nothing to read).
func moduleState(kernel, module, config string) string {
	if b, err := os.ReadFile(procModules); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if strings.HasPrefix(line, module+" ") {
				return "loaded"
			}
		}
	}
	known := false
	if kernel != "" {
		dir := filepath.Join(libModules, kernel)
		if modulesListHas(filepath.Join(dir, "modules.builtin"), module) {
			return "builtin"
		}
		if modulesListHas(filepath.Join(dir, "modules.dep"), module) {
			return "loadable"
		}
		if _, err := os.Stat(filepath.Join(dir, "modules.dep")); err == nil {
			known = true
		}
	}
	if _, err := os.Stat(filepath.Join(sysModule, module)); err == nil {
		return "builtin"
	}
	switch kernelConfig(kernel, config) {
	case "y":
		return "builtin"
	case "m":
		return "loadable" // its file may still be missing; modprobe says
	case "n":
		return "absent"
	}
	if known {
		return "absent"
	}
	return "unknown"
}

// kernelConfig reads option (CONFIG_...) of the running kernel's config,
// from /proc/config.gz or /boot/config-KERNEL: "y", "m", "n" (not set), or
// "" (no config to read).
func kernelConfig(kernel, option string) string {
	var r io.Reader
	if f, err := os.Open(procConfig); err == nil {
		defer f.Close()
		if zr, err := gzip.NewReader(f); err == nil {
			r = zr
		}
	}
	if r == nil && kernel != "" {
		if f, err := os.Open(filepath.Join(bootDir, "config-"+kernel)); err == nil {
			defer f.Close()
			r = f
		}
	}
	if r == nil {
		return ""
	}
	b, err := io.ReadAll(io.LimitReader(r, kernelConfigMax))
	if err != nil {
		return ""
	}
	return configValue(b, option)
}

// kernelConfigMax bounds a kernel config read (Debian's is 280 KB).
const kernelConfigMax = 16 << 20

// configValue is option's value in a kernel config's text: "n" when no
// line sets it ("# CONFIG_X is not set" says so in the file). The text is
// split, not scanned: a bufio.Scanner stopped at a line over 64 KiB and
// took the rest of the file for not set.
func configValue(b []byte, option string) string {
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSuffix(line, "\r"), option+"="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return "n"
}

// Where kernel configs are; tests point them at fixtures.
var (
	procConfig = "/proc/config.gz"
	bootDir    = "/boot"
)
