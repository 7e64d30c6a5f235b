package steps

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rlab-dev/rlab/agent/proto"
	"github.com/rlab-dev/rlab/agent/rpc"
	"github.com/rlab-dev/rlab/engine/results"
	"github.com/rlab-dev/rlab/engine/rundir"
)

// Puller is a Host that can copy files from its agent's work dir into a
// local directory (verified by size and sha256, written to .part and renamed,
// refusing paths that are not local).
type Puller interface {
	Pull(ctx context.Context, files []proto.FileInfo, dstDir string) error
}

// SmallFile is the size up to which the listing carries a file's sha256
// (bigger ones are hashed by the host while they are pulled), and up to which
// a host that cannot pull has its files read through the agent's protocol
// (files.read). A host that can pull gets every file through Pull: the
// small ones in one bundle, the big ones by SFTP (engine/remote).
const SmallFile = 256 << 10

// FetchBase and FetchRate bound one host's fetch as a whole: its listing
// within FetchBase, its pulls within FetchBase and a second more for each
// FetchRate bytes listed (a 1 GiB capture: 30 + 137 minutes; the 20 GiB
// cap: under 46 hours). Each wait of a pull ends after a silence (2
// minutes without a byte, each files.list page its own deadline), but a
// host that sends a byte a minute, or answers each page of its listing
// just before its deadline, kept `rlab run` in its fetch for good
// (SECURITY 140). Past the bound the step fails naming the host, and its
// connection is closed (sshx.Watch: the step's context ended).
//
// The rate is per host and its clock runs while the host waits for one
// of the process's copy slots (remote's bigCopies) and shares the
// controller's link with the other hosts fetching at once (up to
// --parallel, 64): 128 KiB/s is 1 Mbit/s a host, so 64 hosts at once
// behind a 100 Mbit/s link are not cut (512 KiB/s cut the last of 64
// hosts of 600 MB captures each there).
var (
	FetchBase       = 30 * time.Minute
	FetchRate int64 = 128 << 10 // bytes a second
)

// Fetch pulls the files in a host's agent work dir into the run directory:
// the files the host's capture steps made to Dir/captures, everything else
// to Dir/logs. A file's type is what the op that made it recorded
// (Env.Made: a capture op its file and the files its stop reported, a
// process its outputs), not its name: a workload's own foo.pcap is one of
// its logs, and masked as logs are; a capture is one whatever it is named.
// A capture's ring files named after its file before its stop renamed them
// (tcpdump's cap.roce.pcap0) are its too (OfCapture); a file no op
// recorded is a log. Each file is written to .part, checked against the
// size and sha256 the agent listed, and renamed; a path that would leave
// the directory is refused.
type Fetch struct {
	Host string
	Dir  string // the host's folder in the run directory: hosts/<slug>

	// Artifacts are the files pulled, as the run records them
	// (results.Run.Artifacts), with Path relative to Dir
	// ("captures/cap.roce.pcap", "logs/wl.x.stdout"): whoever lays Dir out
	// in the run directory prefixes it. Pulled[i] is the file Artifacts[i]
	// was pulled from, as the host listed it (its path in the work dir).
	Artifacts []results.Artifact
	Pulled    []proto.FileInfo
	Refused   []string // paths that were not local
	// Kept are host files not pulled because the run directory already
	// holds a file of that name the controller wrote (its redacted,
	// bounded agent.log, a dmesg tail): a host's own agent.log in its
	// work dir must not replace the controller's record.
	Kept []string
}

func (s *Fetch) Describe() string { return fmt.Sprintf("fetch artifacts of host %s", s.Host) }

func (s *Fetch) Apply(ctx context.Context, env *Env) error {
	h, err := env.Host(s.Host)
	if err != nil {
		return err
	}
	// Big files are listed without their sha256: the host computes it
	// while it sends them (engine/remote Pull), instead of reading every
	// capture twice. Files up to SmallFile always carry theirs.
	lctx, lcancel := context.WithTimeout(ctx, FetchBase)
	listed, err := listAll(lctx, h, hashMaxFor(h))
	lcancel()
	if err != nil {
		if lctx.Err() != nil && ctx.Err() == nil {
			return fmt.Errorf("list artifacts on host %q: not done within %s, the most a listing may take: %w", s.Host, rpc.FormatDuration(FetchBase), err)
		}
		return fmt.Errorf("list artifacts on host %q: %w", s.Host, err)
	}
	made := env.MadeOn(s.Host)
	var capsMade []string
	for p, k := range made {
		if k == results.ArtifactCapture {
			capsMade = append(capsMade, p)
		}
	}
	isCapture := func(p string) bool {
		if k, ok := made[p]; ok {
			return k == results.ArtifactCapture
		}
		for _, c := range capsMade {
			if OfCapture(p, c) {
				return true
			}
		}
		return false
	}
	listed, left := capFiles(listed, MaxFetchFiles, isCapture)
	// A file lands under its name with the sensitive values masked
	// (env.MaskName); two paths that mask alike keep the first.
	local := func(p string) string {
		if env.MaskName == nil {
			return p
		}
		return env.MaskName(p)
	}
	var caps, logs []proto.FileInfo
	taken := map[string]bool{}
	var alike []string
	for _, f := range listed {
		if !filepath.IsLocal(f.Path) || !filepath.IsLocal(local(f.Path)) {
			s.Refused = append(s.Refused, f.Path)
			continue
		}
		if l := local(f.Path); taken[l] {
			alike = append(alike, l)
			continue
		} else {
			taken[l] = true
		}
		if isCapture(f.Path) {
			caps = append(caps, f)
		} else {
			logs = append(logs, f)
		}
	}
	// pulled records a pulled file: its size and sha256 as listed and
	// verified, unless the mask rewrote it on the way (a log: captures
	// are never rewritten, their records would break).
	pulled := func(f proto.FileInfo, dir, typ string) {
		a := results.Artifact{Host: s.Host, Path: dir + "/" + filepath.ToSlash(local(f.Path)), Type: typ}
		if typ != results.ArtifactLog || !masked(env, f.Path) {
			a.Size, a.SHA256 = f.Size, f.SHA256
		}
		s.Pulled = append(s.Pulled, f)
		s.Artifacts = append(s.Artifacts, a)
	}
	var total int64
	for _, f := range append(slices.Clip(caps), logs...) {
		total = min(total+min(max(f.Size, 0), 1<<50), 1<<50) // a host's sizes: no overflow
	}
	bound := FetchBase + time.Duration(total/FetchRate)*time.Second
	pctx, pcancel := context.WithTimeout(ctx, bound)
	defer pcancel()
	outer := ctx
	ctx = pctx
	var errs []error
	for _, set := range []struct {
		files []proto.FileInfo
		dir   string
		typ   string
	}{{caps, "captures", results.ArtifactCapture}, {logs, "logs", results.ArtifactLog}} {
		dst := filepath.Join(s.Dir, set.dir)
		set.files = slices.DeleteFunc(slices.Clone(set.files), func(f proto.FileInfo) bool {
			if _, err := os.Lstat(filepath.Join(dst, local(f.Path))); err == nil {
				s.Kept = append(s.Kept, local(f.Path))
				return true
			}
			return false
		})
		if len(s.Kept) > 0 && env.Log != nil {
			env.Log.Warn("fetch: files the run directory already holds (the controller's own) are not replaced by the host's", "host", s.Host, "files", s.Kept)
		}
		if p, ok := h.(Puller); ok {
			// Every file through Pull: small ones come in one bundle,
			// and all of them count against the host's byte cap.
			if len(set.files) == 0 {
				continue
			}
			pull := p.Pull
			if rp, ok := h.(RawPuller); ok && set.typ == results.ArtifactCapture {
				pull = rp.PullRaw
			}
			if err := pull(ctx, set.files, dst); err != nil {
				errs = append(errs, fmt.Errorf("pull %d files from host %q into %s: %w", len(set.files), s.Host, dst, err))
				continue
			}
			for _, f := range set.files {
				pulled(f, set.dir, set.typ)
			}
			continue
		}
		// A host that cannot pull (in-process test hosts): small files
		// through files.read, bigger ones are an error.
		var big, small []proto.FileInfo
		for _, f := range set.files {
			if f.Size > SmallFile {
				big = append(big, f)
			} else {
				small = append(small, f)
			}
		}
		// Small files are read a few at a time: one round trip each, not
		// one after another.
		var (
			mu  sync.Mutex
			wg  sync.WaitGroup
			sem = make(chan struct{}, 8)
		)
		mask := env.Mask
		if set.typ == results.ArtifactCapture {
			mask = nil
		}
		for _, f := range small {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				err := readSmall(ctx, h, f, dst, local(f.Path), mask)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, fmt.Errorf("fetch %s from host %q: %w", f.Path, s.Host, err))
					return
				}
				pulled(f, set.dir, set.typ)
			}()
		}
		wg.Wait()
		if len(big) > 0 {
			errs = append(errs, fmt.Errorf("fetch artifacts of host %q: this connection cannot pull files (%d over %d bytes)", s.Host, len(big), SmallFile))
		}
	}
	if pctx.Err() != nil && outer.Err() == nil && len(errs) > 0 {
		errs = append([]error{fmt.Errorf("host %q: its %d bytes of artifacts were not pulled within %s (%s, and a second for each %d KiB): a host this slow is cut off", s.Host, total, rpc.FormatDuration(bound), rpc.FormatDuration(FetchBase), FetchRate>>10)}, errs...)
	}
	if len(alike) > 0 {
		errs = append(errs, fmt.Errorf("host %q: %d files were not pulled: with the sensitive values masked, their names are another file's (%s)", s.Host, len(alike), strings.Join(alike[:min(3, len(alike))], ", ")))
	}
	if len(left) > 0 {
		errs = append(errs, fmt.Errorf("host %q: its work dir holds %d files, over the %d a run pulls: the workloads' outputs and captures came first, %d files were left there (%s)", s.Host, len(listed)+len(left), MaxFetchFiles, len(left), firstPaths(left, 3)))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if len(s.Refused) > 0 {
		return fmt.Errorf("host %q reported files outside its work dir (refused): %s", s.Host, strings.Join(s.Refused, ", "))
	}
	return nil
}

// masked says whether env's mask rewrites the file at p as it is pulled
// (its listed size and sha256 are then not the run directory's).
func masked(env *Env, p string) bool {
	if env.Mask == nil {
		return false
	}
	w := env.Mask(p, io.Discard)
	if w == nil {
		return false
	}
	w.Close()
	return true
}

// MaxFetchFiles bounds the files pulled from one host: a work dir a
// workload filled with small files is pulled up to it, the workloads'
// outputs first, and what was left is said.
const MaxFetchFiles = 100000

// MaxListBytes bounds what the listing of one host's work dir holds, its
// names and their entries (fileEntryBytes each): a listing comes page by
// page, each page a reply line, and a host that pages forever with long
// names was bounded only by the count (4 x MaxFetchFiles), 1.6 GB of
// 4 KiB names (SECURITY 130). 100,000 files of 100-byte names are 20 MB.
const MaxListBytes = 64 << 20

// fileEntryBytes is what a listed file costs beside its name.
const fileEntryBytes = 128

// listAll lists the work dir page by page (proto.FilesListOptions).
func listAll(ctx context.Context, h Host, hashMax int64) ([]proto.FileInfo, error) {
	var all []proto.FileInfo
	after := ""
	size := 0
	for {
		page, err := rpc.Invoke(ctx, h, rpc.FilesList, proto.FilesListOptions{HashMax: hashMax, After: after})
		if err != nil {
			return nil, err
		}
		all = append(all, page.Files...)
		for _, f := range page.Files {
			size += len(f.Path) + fileEntryBytes
		}
		if !page.More || len(page.Files) == 0 {
			return all, nil
		}
		next := page.Files[len(page.Files)-1].Path
		if next <= after || len(all) > 4*MaxFetchFiles || size > MaxListBytes {
			// A host that pages backwards, or forever: what it gave is
			// what there is.
			return all, nil
		}
		after = next
	}
}

// capFiles keeps at most max files, the workloads' outputs (wl.*) first,
// then captures, then the rest, each in listing order; left is the others.
func capFiles(files []proto.FileInfo, max int, isCapture func(string) bool) (kept, left []proto.FileInfo) {
	if len(files) <= max {
		return files, nil
	}
	rank := func(f proto.FileInfo) int {
		switch b := filepath.Base(f.Path); {
		case strings.HasPrefix(b, "wl."):
			return 0
		case isCapture(f.Path):
			return 1
		}
		return 2
	}
	sorted := slices.Clone(files)
	slices.SortStableFunc(sorted, func(a, b proto.FileInfo) int { return rank(a) - rank(b) })
	return sorted[:max], sorted[max:]
}

func firstPaths(files []proto.FileInfo, n int) string {
	var ps []string
	for i, f := range files {
		if i == n {
			ps = append(ps, fmt.Sprintf("and %d more", len(files)-n))
			break
		}
		ps = append(ps, f.Path)
	}
	return strings.Join(ps, ", ")
}

// hashMaxFor is the listing's HashMax: files bigger than SmallFile are
// listed unhashed for a host whose pulls verify them against the sum the
// host computes while sending; hashed for every other host.
func hashMaxFor(h Host) int64 {
	if p, ok := h.(HashingPuller); ok && p.HashesWhilePulling() {
		return SmallFile
	}
	return 0
}

// RawPuller is a Puller whose Pull may rewrite what it pulls (mask the
// sensitive values of logs); PullRaw copies files as they are, for the
// captures, whose binary records a rewrite would break.
type RawPuller interface {
	Puller
	PullRaw(ctx context.Context, files []proto.FileInfo, dstDir string) error
}

// HashingPuller is a Puller that verifies a file listed without a sha256
// against the sum the host computes while sending it (engine/remote).
type HashingPuller interface {
	Puller
	HashesWhilePulling() bool
}

// Undo does nothing: pulled files are the run's record.
func (s *Fetch) Undo(context.Context, *Env) error { return nil }

// OfCapture says whether the work dir file at p is the capture file c
// ("cap.roce.pcap") or one of its ring: named by the agent at stop
// (cap.roce.000.pcap) or by tcpdump before it (cap.roce.pcap0).
func OfCapture(p, c string) bool {
	if p == c {
		return true
	}
	digits := func(s string) bool {
		return s != "" && strings.Trim(s, "0123456789") == ""
	}
	if rest, ok := strings.CutPrefix(p, c); ok && digits(rest) {
		return true
	}
	ext := path.Ext(c)
	if mid, ok := strings.CutPrefix(p, strings.TrimSuffix(c, ext)+"."); ok {
		if n, ok := strings.CutSuffix(mid, ext); ok && digits(n) {
			return true
		}
	}
	return false
}

// readSmall fetches one small file with files.read into dst/name.
func readSmall(ctx context.Context, h Host, f proto.FileInfo, dst, name string, mask func(string, io.Writer) io.WriteCloser) error {
	p := filepath.Join(dst, name)
	if rel, err := filepath.Rel(dst, p); err != nil || !filepath.IsLocal(rel) {
		return fmt.Errorf("refusing path %q: it leaves %s", f.Path, dst)
	}
	fd, err := rpc.Invoke(ctx, h, rpc.FilesRead, proto.FilesReadParams{Path: f.Path, MaxBytes: SmallFile})
	if err != nil {
		return err
	}
	sum := sha256.Sum256(fd.Data)
	if int64(len(fd.Data)) != f.Size || hex.EncodeToString(sum[:]) != f.SHA256 {
		return fmt.Errorf("got %d bytes (sha256 %x), the listing said %d (sha256 %s): the file changed or was damaged", len(fd.Data), sum[:8], f.Size, f.SHA256)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	data := fd.Data
	if mask != nil {
		var b bytes.Buffer
		if w := mask(f.Path, &b); w != nil {
			w.Write(data)
			w.Close()
			data = b.Bytes()
		}
	}
	// data is the host's bytes, masked above for a text (mask): a capture
	// is kept as it was (rundir.CreateRaw says why).
	out, err := rundir.CreateRaw(p + ".part")
	if err != nil {
		return err
	}
	_, err = out.Write(data)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(p + ".part")
		return err
	}
	return rundir.Rename(p+".part", p)
}
