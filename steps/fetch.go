package steps

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/rlab-dev/rlab/agent/proto"
)

// Puller is a Host that can copy files from its agent's work dir into a
// local directory (verified by size and sha256, written to .part and renamed,
// refusing paths that are not local).
type Puller interface {
	Pull(ctx context.Context, files []proto.FileInfo, dstDir string) error
}

// Fetch pulls the files in a host's agent work dir into the run directory:
// captures (*.pcap*) to Dir/captures, everything else to Dir/logs.
type Fetch struct {
	Host string
	Dir  string // the host's folder in the run directory: hosts/<slug>

	Pulled  []proto.FileInfo
	Refused []string // paths that were not local
}

func (s *Fetch) Describe() string { return fmt.Sprintf("fetch artifacts of host %s", s.Host) }

func (s *Fetch) Apply(ctx context.Context, env *Env) error {
	h, err := env.Host(s.Host)
	if err != nil {
		return err
	}
	p, ok := h.(Puller)
	if !ok {
		return fmt.Errorf("fetch artifacts of host %q: this connection cannot pull files", s.Host)
	}
	var list proto.FilesList
	if err := h.Call(ctx, proto.MethodFilesList, proto.FilesListParams{}, &list); err != nil {
		return fmt.Errorf("list artifacts on host %q: %w", s.Host, err)
	}
	var caps, logs []proto.FileInfo
	for _, f := range list.Files {
		if !filepath.IsLocal(f.Path) {
			s.Refused = append(s.Refused, f.Path)
			continue
		}
		if IsCaptureFile(f.Path) {
			caps = append(caps, f)
		} else {
			logs = append(logs, f)
		}
	}
	for _, set := range []struct {
		files []proto.FileInfo
		dir   string
	}{{caps, "captures"}, {logs, "logs"}} {
		if len(set.files) == 0 {
			continue
		}
		dst := filepath.Join(s.Dir, set.dir)
		if err := p.Pull(ctx, set.files, dst); err != nil {
			return fmt.Errorf("pull %d files from host %q into %s: %w", len(set.files), s.Host, dst, err)
		}
		s.Pulled = append(s.Pulled, set.files...)
	}
	if len(s.Refused) > 0 {
		return fmt.Errorf("host %q reported files outside its work dir (refused): %s", s.Host, strings.Join(s.Refused, ", "))
	}
	return nil
}

// Undo does nothing: pulled files are the run's record.
func (s *Fetch) Undo(context.Context, *Env) error { return nil }

// IsCaptureFile says whether a work dir file is a packet capture (tcpdump's
// ring files add a number after .pcap).
func IsCaptureFile(p string) bool {
	b := filepath.Base(p)
	return strings.HasSuffix(b, ".pcap") || strings.Contains(b, ".pcap") || strings.HasSuffix(b, ".pcapng")
}
