package proto

import (
	"fmt"
	"unicode/utf8"
)

// The checks rpc.Invoke makes of an answer before any step sees it: a
// host's answer is bounded by the line (MaxLine) and by MaxValues, but what
// the controller keeps of it for the rest of the run (state.json, samples,
// the logs to pull) must be bounded by what an honest host says, or one
// lying host grows it with every step (SECURITY 126, 128).

// Check says whether id is one a host may report: BootID empty or a boot
// id as the kernel writes it (a UUID, 36 characters). What a host reports
// is journaled in state.json with every process it runs and compared by
// `rlab down`, so a boot id of megabytes (a lying host) grew the journal
// that is written whole at every step (SECURITY 126). rpc.Invoke calls it
// on every answer that carries one (ProcStarted, CaptureStarted).
func (id ProcIdentity) Check() error {
	if id.BootID == "" || validBootID(id.BootID) {
		return nil
	}
	s := id.BootID
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return fmt.Errorf("boot_id %q (%d bytes) is not a boot id (a UUID)", s, len(id.BootID))
}

func validBootID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// Check says whether r is an answer a host may give: the root qdisc's kind
// and handle as tc names them, netem's parameters as tc prints them, and
// the agent's one sentence on gso_max_segs (a kernel error at most in it).
// Journaled with the impairment (steps' Effect.Detail), they were taken
// at any length up to a whole reply line (SECURITY 126); gso, added later,
// was again (attack round 13: 8 impairments answered with 8 MiB each made
// state.json 134 MB, rewritten at every step).
//
// The sizes are Bounds' (ImpairResult.*), as for every answer.
func (r ImpairResult) Check() error { return checkBounds(&r) }

// Check says whether f is an answer a host may give, in what the run
// journals of it: its work dir, a path (PATH_MAX, 4096 bytes), goes into
// state.json, which is written whole at every step (SECURITY 126).
//
// A tool's version (printable text) is copied into every sample of each workload that runs
// the tool (results.Meta.ToolVersion), so it is at most MaxToolVersion
// bytes: a version of 8 MiB made one perftest trial's 80 samples 640 MiB
// of results.json and 2.7 GB to encode (SECURITY 138). Honest versions are
// a few digits and dots ("6.22", "11.4.0"); its path is a path.
//
// The kernel (uname -r) is named in the error of every rping workload
// over an iWARP device that runs into its timeout (kinds/rping siwStall),
// so it is at most MaxKernel bytes, the utsname's release field: a
// kernel of 7 MiB made two such workloads a 184 MB run directory
// (attack round 14, host side).
//
// A netdev's name: engine/run's data link names the server's netdev
// holding its address in the skip reason of every later workload of a
// pair whose link is down: a 7 MiB name made 6 tcp workloads a 250 MB run
// directory in 12 s (attack round 14, host side).
//
// The sizes are Bounds' (Facts.*, Netdev.*, Tool.* ...), as for every
// answer; Check adds that a version is printable.
func (f Facts) Check() error {
	if err := checkBounds(&f); err != nil {
		return err
	}
	for name, t := range f.Tools {
		if !printable(t.Version) {
			return fmt.Errorf("tool %.64q: a version %.64q that is not printable text", name, t.Version)
		}
	}
	return nil
}

// printable says s is valid UTF-8 without control characters: a tool's
// version is a match of its own --version output ("6.22"), and it is
// copied into every sample and printed by `rlab compare` (SECURITY 154).
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
			return false
		}
	}
	return true
}

// MaxToolVersion bounds a tool's version in a facts answer.
const MaxToolVersion = 256

// MaxKernel bounds a facts answer's kernel: the utsname's release field
// holds 64 bytes and a NUL.
const MaxKernel = 64

// MaxNetdevName bounds a netdev's name in a facts answer: the kernel's
// IFNAMSIZ is 16 bytes with the NUL.
const MaxNetdevName = 15

// MaxCounters bounds the counters of one counters.read answer: a request
// names a workload's few devices and netdevs (an mlx5 port has about 150
// counters, a netdev about 25), and each counter read becomes a sample of
// the workload, kept for the run.
const MaxCounters = 4096

// Check says whether c is a reading a host may give: at most MaxCounters
// values and as many unreadable ones, each reason at most 4 KiB (an
// error's text).
func (c Counters) Check() error { return checkBounds(&c) }

// MaxCaptureFiles bounds the files of one capture.stop answer: the agent's
// capture is a ring of 4 files. Each is kept for the run and pulled.
const MaxCaptureFiles = 64

// Check says whether r is an answer a host may give: at most
// MaxCaptureFiles files, each path a file name (255 bytes), and tcpdump's
// report at most OutputLimit.
func (r CaptureResult) Check() error {
	if err := checkBounds(&r); err != nil {
		return err
	}
	for i, f := range r.Files {
		// A capture file is a file name of the work dir (roce.pcap1);
		// FileInfo's bound is a path's.
		if len(f.Path) > nameMax {
			return &BoundError{Field: fmt.Sprintf("files[%d].path", i), Key: "FileInfo.Path", Len: len(f.Path), Unit: "bytes", Max: nameMax, Why: "a capture's file, a file name (NAME_MAX)"}
		}
	}
	return nil
}

// Check says whether l is a page of a listing a host may give: each path
// at most a path's 4096 bytes and each sha256 64 hex digits at most. The
// listing is kept for the pull (SECURITY 130).
func (l FilesList) Check() error { return checkBounds(&l) }

// The bounds of an error a host answers with (Bounded). The shipped agent's
// messages are a sentence, its commands an argv of a few names and its
// stderr a tail of at most 4 KiB.
const (
	MaxErrorMessage = 4096
	MaxErrorCommand = 16 << 10 // the argv's bytes in all
	MaxErrorStderr  = 16 << 10 // its last bytes are kept
)

// Bounded returns e with each field cut to what an agent's error ever
// holds: the code to 64 bytes, the message to its first MaxErrorMessage
// bytes, the command to its first arguments within MaxErrorCommand bytes
// and the stderr to its last MaxErrorStderr bytes, each cut said so.
// Every step that fails on a host keeps the error's text for the run (its
// event, the workload's error in results.json, junit.xml, summary.md, the
// report, the terminal), so a host answering each call with a message of
// megabytes grew all of them by that much per failed step (SECURITY 136).
// rpc.Pending.Wait calls it on every error answer.
func (e *Error) Bounded() *Error {
	if e == nil {
		return nil
	}
	b := *e
	b.Code = cutHead(b.Code, 64)
	b.Message = cutHead(b.Message, MaxErrorMessage)
	if len(b.Stderr) > MaxErrorStderr {
		s := b.Stderr[len(b.Stderr)-MaxErrorStderr:]
		for i := 0; i < 4 && len(s) > 0 && !utf8.RuneStart(s[0]); i++ {
			s = s[1:]
		}
		b.Stderr = fmt.Sprintf("(first %d bytes cut) ", len(b.Stderr)-len(s)) + s
	}
	n := 0
	for i, a := range b.Command {
		if n+len(a) > MaxErrorCommand {
			b.Command = append(b.Command[:i:i], cutHead(a, max(MaxErrorCommand-n, 0)))
			if more := len(e.Command) - i - 1; more > 0 {
				b.Command = append(b.Command, fmt.Sprintf("(%d more arguments cut)", more))
			}
			break
		}
		n += len(a)
	}
	return &b
}

// cutHead cuts s to its first n bytes (on a rune's start) and says how
// long it was.
func cutHead(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + fmt.Sprintf("… (%d bytes in all)", len(s))
}

// Check says whether r is an answer a host may give: its signal is a
// signal's name as Go writes it ("killed", "signal 34", "user defined
// signal 1"), at most 64 bytes. A failed process's error says it ("killed
// by …"), and the error is kept for the run: a megabyte signal made each
// failed trial's error a megabyte (SECURITY 143). Its argv and output file
// names are the controller's own or cut where they are kept (126).
func (r ProcResult) Check() error { return checkBounds(&r) }
