package remote

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/rlab-dev/rlab/engine/sshx"
)

// installTag begins the status line the install script prints last:
// "RLAB-INSTALL ok" or "RLAB-INSTALL fail <stage> [detail]".
const installTag = "RLAB-INSTALL"

// installScript is the one session of a compressed install. It prints the
// probe (when withProbe), then reads one line from stdin: "gz <hash>" is
// followed by the agent's gzip stream, which it inflates to a temp name of
// its own in the cache folder named by the hash (exclusive create, 0600),
// checks the sha256 of what landed, chmods 0700 and renames over the final
// name — a partial or wrong file never has the name that runs; anything
// else ("skip", or stdin closed) ends it. Only hex (the hashes this rlab
// carries, the random temp suffix) is interpolated, and the hash read from
// stdin must be one of them before the shell uses it.
func installScript(hashes []string, rnd string, withProbe bool) string {
	var sb strings.Builder
	if withProbe {
		sb.WriteString(probeCmd(hashes))
		sb.WriteString("; ")
	}
	pat := strings.Join(hashes, "|")
	if pat == "" {
		pat = "none"
	}
	sb.WriteString(`st() { echo "` + installTag + ` $*"; }; `)
	sb.WriteString(`read -r op h || exit 0; [ "$op" = gz ] || exit 0; `)
	sb.WriteString(`case $h in ` + pat + `) ;; *) st fail hash; exit 1;; esac; `)
	sb.WriteString(`umask 077; r="$HOME/.cache/rlab"; d="$r/agent/$h"; f="$d/rlab-agent"; t="$f.tmp-` + rnd + `"; `)
	// Temp files of uploads cut off earlier (nothing could remove them),
	// once older than any upload could take (staleTempAge); a folder just
	// made has none (one fork less on a cold host).
	sb.WriteString(`if [ -d "$d" ]; then find "$d" -maxdepth 1 -type f -name 'rlab-agent.tmp-*' -mmin +` + fmt.Sprint(int(staleTempAge.Minutes())) + ` -exec rm -f {} + 2>/dev/null; `)
	sb.WriteString(`else mkdir -p "$d" || { st fail mkdir; exit 1; }; fi; chmod 700 "$r" "$r/agent" "$d" 2>/dev/null; `)
	sb.WriteString(`(set -C; exec gzip -dc >"$t") || { rm -f "$t"; st fail gunzip; exit 1; }; `)
	sb.WriteString(sumSh + `; `)
	sb.WriteString(`[ -n "$s" ] || { rm -f "$t"; st fail nosha; exit 1; }; `)
	sb.WriteString(`case $s in "$h "*) ;; *) rm -f "$t"; st fail verify "${s%% *}"; exit 1;; esac; `)
	sb.WriteString(`{ chmod 700 "$t" && mv -f "$t" "$f"; } || { rm -f "$t"; st fail rename; exit 1; }; st ok`)
	return sb.String()
}

// installGzip installs the agent in one session: the probe (unless p, the
// probe a warm-start shell printed, is given), then the gzip'd agent on
// stdin to installScript. A host without gzip, or without a tool to check
// a sha256, goes to installSFTP instead.
func (a *Agents) installGzip(ctx context.Context, c *sshx.Client, p *probe, force bool, limit time.Duration) (*Installed, error) {
	rnd := randHex()
	step := "install agent"
	if p == nil {
		step = "probe platform"
	}
	sess, err := c.OpenSession(ctx, limit)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", step, err)
	}
	defer sess.Close()
	// One watch for the session: silence for limit (each byte either way
	// renews it), more output than an install prints, or ctx's end closes
	// the connection, which ends every wait below (closing the session
	// would not with OpenSSH).
	w := c.WatchWith(ctx, step, limit, sshx.WatchOptions{Idle: true, Session: sess})
	defer w.Stop()
	var stderr bytes.Buffer
	sess.Stderr = &limitedBuffer{max: 8 << 10, buf: &stderr}
	stdin, err := sess.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("install agent: %w", err)
	}
	stdout, err := sess.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("install agent: %w", err)
	}
	if err := c.Start(ctx, sess, installScript(a.hashes(), rnd, p == nil), limit); err != nil {
		return nil, fmt.Errorf("%s: %w", step, err)
	}
	r := bufio.NewReaderSize(&watchedReader{r: stdout, w: w, max: installOutMax}, 16<<10)
	// end closes stdin (the script stops at its read, or after the
	// stream) and returns what else it printed once it has exited.
	end := func() ([]byte, error) {
		stdin.Close()
		rest, _ := io.ReadAll(io.LimitReader(r, maxJunkBytes))
		io.Copy(io.Discard, r)
		return rest, sess.Wait()
	}
	if p == nil {
		out, err := readProbe(r)
		if err == nil {
			p, err = parseProbe(out)
		}
		if err != nil {
			_, werr := end()
			if serr := w.Err(); serr != nil {
				return nil, serr
			}
			return nil, fmt.Errorf("probe platform: %w%s", errors.Join(err, exitErr(werr)), stderrNote(&stderr))
		}
	}
	w.SetStep("upload and verify")
	inst, b, err := a.plan(p, force)
	if err != nil || b == nil {
		end()
		return inst, err
	}
	if !p.canInflate() || !p.canVerify() {
		end()
		if err := w.Stop(); err != nil {
			return inst, err
		}
		return a.installSFTP(ctx, c, p, inst, b, limit)
	}
	gz, err := b.gzipped()
	if err != nil {
		end()
		return inst, fmt.Errorf("install agent at %s: %w", inst.Path, err)
	}
	tmp := inst.Path + ".tmp-" + rnd
	// Read the status while the stream goes out: a script that stops
	// early must not be left blocked on a full stdout.
	done := make(chan []byte, 1)
	go func() {
		out, _ := io.ReadAll(io.LimitReader(r, maxJunkBytes))
		io.Copy(io.Discard, r)
		done <- out
	}()
	// Written in pieces, each renewing the watch: a host that stops
	// taking the stream is cut off after limit, one that is slow is not.
	cw := &countWriter{w: stdin}
	_, werr := io.WriteString(stdin, "gz "+inst.Hash+"\n")
	for rest := gz; werr == nil && len(rest) > 0; {
		k := min(len(rest), 64<<10)
		_, werr = cw.Write(rest[:k])
		rest = rest[k:]
		w.Reset()
	}
	stdin.Close()
	waitErr := sess.Wait()
	out := <-done
	inst.Sent = cw.n
	status := statusLine(out)
	fail := func(err error) (*Installed, error) {
		return inst, fmt.Errorf("install agent at %s: %w", inst.Path, err)
	}
	switch serr := w.Err(); {
	case serr != nil && ctx.Err() != nil:
		return fail(fmt.Errorf("upload interrupted after %d of %d bytes: %w", cw.n, len(gz), context.Cause(ctx)))
	case serr != nil:
		return fail(fmt.Errorf("after %d of %d bytes sent: %w", cw.n, len(gz), serr))
	case status == "ok":
		a.log.Debug("agent installed", "host", c.Name, "path", inst.Path, "how", "gzip", "bytes_shipped", cw.n, "agent_bytes", b.size)
		return inst, nil
	case status == "":
		// No status line: the session ended under the script (the link
		// dropped, sshd killed). Whatever landed has the temp name.
		cause := errors.Join(werr, exitErr(waitErr))
		if cause == nil {
			cause = errors.New("the session ended without a status")
		}
		return fail(fmt.Errorf("upload to %s cut after %d of %d bytes (gzip of the %d-byte agent): %w%s", tmp, cw.n, len(gz), b.size, cause, stderrNote(&stderr)))
	}
	stage, detail, _ := strings.Cut(strings.TrimPrefix(status, "fail "), " ")
	msg := strings.TrimSpace(stderr.String())
	switch stage {
	case "mkdir":
		if noSpace(msg) {
			return fail(fmt.Errorf("create %s: no space left on the host's disk: %s", path.Dir(inst.Path), msg))
		}
		return fail(fmt.Errorf("create %s: %s", path.Dir(inst.Path), msg))
	case "gunzip":
		if noSpace(msg) {
			return fail(fmt.Errorf("write %s: no space left on the host's disk: %s", tmp, msg))
		}
		return fail(fmt.Errorf("upload to %s: inflate after %d of %d bytes sent: %s", tmp, cw.n, len(gz), msg))
	case "nosha":
		return fail(fmt.Errorf("verify %s: the host has none of sha256sum, shasum or openssl to check it with: install coreutils", tmp))
	case "verify":
		return fail(fmt.Errorf("verify %s: sha256 on the host is %q, want %s (upload corrupted)", tmp, truncate(detail, 64), inst.Hash))
	case "rename":
		return fail(fmt.Errorf("rename %s to %s: %s", tmp, inst.Path, msg))
	}
	return fail(fmt.Errorf("upload to %s: the install script said %q: %s", tmp, truncate(status, 200), msg))
}

// readProbe reads what the session printed up to and including the probe's
// end marker line (a login script may print before it), bounded.
func readProbe(r *bufio.Reader) ([]byte, error) {
	var out []byte
	for {
		line, err := readLine(r, maxJunkBytes)
		out = append(out, line...)
		if err != nil {
			return out, fmt.Errorf("unexpected output %q: %w", truncate(string(out), 200), err)
		}
		if strings.TrimSpace(string(line)) == probeEnd {
			return out, nil
		}
		if len(out) > maxJunkBytes {
			return out, fmt.Errorf("no probe in the first %d bytes of output (it began %q)", maxJunkBytes, truncate(string(out), 120))
		}
	}
}

// statusLine is the install script's last status ("ok", "fail ..."), or ""
// when it printed none.
func statusLine(out []byte) string {
	var st string
	for _, l := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), installTag+" "); ok {
			st = rest
		}
	}
	return st
}

func noSpace(msg string) bool { return strings.Contains(strings.ToLower(msg), "no space left") }

// exitErr is a session's Wait error, or nil when it merely exited non-zero
// (the status line says why).
func exitErr(err error) error {
	var ee interface{ ExitStatus() int }
	if errors.As(err, &ee) {
		return nil
	}
	return err
}

func stderrNote(b *bytes.Buffer) string {
	if s := strings.TrimSpace(b.String()); s != "" {
		return "; stderr: " + truncate(lastLines(s, 5), 1000)
	}
	return ""
}

// countWriter counts the bytes the SSH channel took.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
