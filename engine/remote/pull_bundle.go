package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/rlab-dev/rlab/agent/proto"
)

// pullBundle pulls files in one `rlab-agent bundle` stream over a second
// session of the agent's connection. It runs as the login user even under
// become (see proto.BundleCommand); a root agent has already given its
// files to that user. fallback is true when no bundle could be read at all
// (an agent without the command, a host that allows no second exec):
// nothing was written and the caller should use SFTP.
func (a *Agent) pullBundle(ctx context.Context, files []proto.FileInfo, d *dests, land func(int64)) (written int64, fallback bool, errs []error) {
	if a.Installed == nil || a.Installed.Path == "" || a.Hello.WorkDir == "" {
		return 0, true, nil
	}
	req, err := json.Marshal(proto.BundleRequest{Files: files})
	if err != nil || len(req) > proto.MaxBundleRequest {
		return 0, true, nil
	}
	sess, err := a.client.NewSession()
	if err != nil {
		return 0, true, nil
	}
	defer sess.Close()
	stderr := &tailBuffer{max: 8 << 10}
	sess.Stdin = bytes.NewReader(req)
	sess.Stderr = stderr
	out, err := sess.StdoutPipe()
	if err != nil {
		return 0, true, nil
	}
	// Only the agent's path (our hash under the host's home) and the work
	// dir its hello reported reach the remote shell, quoted.
	cmd := "exec " + shellQuote(a.Installed.Path) + " " + proto.BundleCommand + " --work-dir " + shellQuote(a.Hello.WorkDir)
	if err := sess.Start(cmd); err != nil {
		return 0, true, nil
	}
	stop := context.AfterFunc(ctx, func() { sess.Close() })
	defer stop()
	written, got, errs := readBundle(out, files, d, land)
	io.Copy(io.Discard, io.LimitReader(out, 64<<10)) // let the agent reach its exit
	werr := sess.Wait()
	if ctx.Err() != nil {
		return written, false, append([]error{fmt.Errorf("bundle of %d files: %w", len(files), ctx.Err())}, errs...)
	}
	if !got && len(errs) > 0 {
		return 0, true, nil
	}
	if len(errs) > 0 && werr != nil {
		if st := strings.TrimSpace(stderr.String()); st != "" {
			errs[0] = fmt.Errorf("%w (agent bundle: %v: %s)", errs[0], werr, truncate(lastLines(st, 5), 1000))
		}
	}
	return written, false, errs
}
