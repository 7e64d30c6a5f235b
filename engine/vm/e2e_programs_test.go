package vm

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/rlab-dev/rlab/engine/roce"
)

// The project's own verbs programs (labs/programs/src) in the tour: their
// sources are copied into both guests over SSH and built there with the
// image's compiler and headers, then each runs server first, client second.
// This needs no rlab engine: it is what the program workload will automate.

const (
	progDir  = "/tmp/rlab-programs"
	progPort = "7471"
	progImm  = "0x1234abcd"
	// progBulk is cut from the programs' 1 GiB default to what TCG moves
	// in seconds.
	progBulk = "64M"
)

var (
	progReadRE  = regexp.MustCompile(`(?m)^RDMA_READ matches: 4096 bytes read back$`)
	progWriteRE = regexp.MustCompile(`(?m)^RDMA_WRITE complete: 4096 bytes to addr 0x([0-9a-f]+) rkey 0x([0-9a-f]+)$`)
	progImmRE   = regexp.MustCompile(`(?m)^RDMA server got immediate ` + progImm + ` \(4096 bytes written\)\nimmediate data matches$`)
	progBulkRE  = regexp.MustCompile(`(?m)^RDMA client wrote 67108864 bytes in ([0-9.]+) s \(([0-9.]+) MiB/s\)$`)
	progAccRE   = regexp.MustCompile(`(?m)^accepted: buffer addr 0x([0-9a-f]+) rkey 0x([0-9a-f]+) len (\d+) in the private data$`)
)

// progBuilt remembers the guests the programs were built on: one build per
// guest for all the program ops (and their retries).
var progBuilt sync.Map

// buildPrograms copies labs/programs/src into each guest and runs make
// there with warnings as errors.
func buildPrograms(ctx context.Context, gs ...*guest) error {
	src := filepath.Join("..", "..", "labs", "programs", "src")
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, g := range gs {
		if _, done := progBuilt.Load(g.name); done {
			continue
		}
		if _, _, err := g.run(ctx, 20*time.Second, "mkdir", "-p", progDir); err != nil {
			return err
		}
		for _, e := range ents {
			b, err := os.ReadFile(filepath.Join(src, e.Name()))
			if err != nil {
				return err
			}
			if err := g.put(ctx, progDir+"/"+e.Name(), b); err != nil {
				return err
			}
		}
		if out, errOut, err := g.run(ctx, 3*time.Minute, "make", "-C", progDir, "CFLAGS=-O2 -g -Wall -Wextra -Werror"); err != nil {
			return fmt.Errorf("build the programs on %s: %v\n%s%s", g.name, err, out, errOut)
		}
		progBuilt.Store(g.name, true)
	}
	return nil
}

// put writes b to path on g (cat reading the session's stdin).
func (g *guest) put(ctx context.Context, path string, b []byte) error {
	s, err := g.c.NewSession()
	if err != nil {
		return fmt.Errorf("%s: new session: %w", g.name, err)
	}
	defer s.Close()
	s.Stdin = bytes.NewReader(b)
	var e bytes.Buffer
	s.Stderr = &e
	if err := s.Run(commandLine([]string{"sh", "-c", `cat > "$0"`, path})); err != nil {
		return fmt.Errorf("%s: write %s: %w: %s", g.name, path, err, e.String())
	}
	return nil
}

func programOps() []op {
	build := func(ctx context.Context, srv, cli *guest) error { return buildPrograms(ctx, srv, cli) }
	bin := func(p string, args ...string) []string { return append([]string{progDir + "/" + p}, args...) }
	server := func(out string) error {
		if !progAccRE.MatchString(out) || !regexp.MustCompile(`(?m)^client disconnected$`).MatchString(out) {
			return fmt.Errorf("server: no accept with the buffer in the private data, or no disconnect: %q", out)
		}
		return nil
	}
	return []op{
		{name: "prog-write-read", before: build, cm: true, hasAddr: true,
			server: bin("server", progPort), client: bin("client", "10.99.0.1", progPort),
			check: func(out string) error {
				if !progWriteRE.MatchString(out) || !progReadRE.MatchString(out) {
					return fmt.Errorf("client: want RDMA_WRITE complete and RDMA_READ matches: %q", out)
				}
				return nil
			},
			checkServer: server,
			// The capture: the REP's private data names the buffer, and the
			// WRITE's and the READ's RETH carry that same address and rkey.
			pcap: "prog-write-read", opcodes: []int{12, 100}, // READ Request; UD SEND Only (the CM MADs)
			checkPcap: checkProgramCapture(true, false)},
		{name: "prog-write-imm", before: build, cm: true, hasAddr: true,
			server: bin("server", progPort), client: bin("imm_client", "10.99.0.1", progPort, progImm),
			check: func(out string) error {
				if !regexp.MustCompile(`(?m)^RDMA_WRITE_WITH_IMM complete: 4096 bytes, immediate ` + progImm + `$`).MatchString(out) {
					return fmt.Errorf("client: no RDMA_WRITE_WITH_IMM complete: %q", out)
				}
				return nil
			},
			checkServer: func(out string) error {
				if err := server(out); err != nil {
					return err
				}
				if !progImmRE.MatchString(out) {
					return fmt.Errorf("server: the immediate %s did not arrive with the data: %q", progImm, out)
				}
				return nil
			},
			pcap: "prog-write-imm", opcodes: []int{100},
			checkPcap: checkProgramCapture(false, true)},
		{name: "prog-bulk", before: build, cm: true, hasAddr: true,
			server: bin("server", progPort, "4M"), client: bin("bulk_client", "10.99.0.1", progPort, progBulk),
			check: func(out string) error {
				m := progBulkRE.FindStringSubmatch(out)
				if m == nil {
					return fmt.Errorf("client: no MiB/s line for %s: %q", progBulk, out)
				}
				if v, err := strconv.ParseFloat(m[2], 64); err != nil || v <= 0 {
					return fmt.Errorf("client: MiB/s %q", m[2])
				}
				return nil
			},
			checkServer: server},
	}
}

// checkProgramCapture reads a capture of a program pair with rlab's
// decoder: a REP whose private data holds the buffer, then a WRITE whose
// RETH (in its First or Only packet) names that buffer's address and rkey;
// with read, a READ Request naming it too; with imm, the WRITE's Last or
// Only packet with Immediate carrying progImm.
func checkProgramCapture(read, imm bool) func([]byte) error {
	return func(pcap []byte) error {
		var buf *roce.BufferInfo
		var bad []string
		var writes, reads, imms int
		_, err := roce.Scan(bytes.NewReader(pcap), func(p *roce.Packet) error {
			if p.CM.Attr == roce.CMRep {
				if b, ok := p.CM.Buffer(); ok {
					buf = &b
				}
			}
			if !p.HasBTH {
				return nil
			}
			switch op := p.BTH.Opcode; op {
			case 9, 11: // RDMA WRITE Last / Only with Immediate
				if p.Headers&roce.HdrImmDt == 0 || fmt.Sprintf("0x%08x", p.ImmDt) != progImm {
					bad = append(bad, fmt.Sprintf("frame %d: WRITE with Immediate carries 0x%08x, want %s", p.Number, p.ImmDt, progImm))
				}
				imms++
			}
			if p.Headers&roce.HdrRETH == 0 {
				return nil
			}
			switch p.BTH.Opcode {
			case 12:
				reads++
			default:
				writes++
			}
			if buf == nil {
				bad = append(bad, fmt.Sprintf("frame %d: a RETH before any REP with a buffer", p.Number))
			} else if p.RETH.RKey != buf.RKey || p.RETH.VA != buf.Addr {
				bad = append(bad, fmt.Sprintf("frame %d: RETH VA 0x%x rkey 0x%x, the REP said 0x%x 0x%x", p.Number, p.RETH.VA, p.RETH.RKey, buf.Addr, buf.RKey))
			}
			return nil
		})
		if err != nil {
			return err
		}
		if buf == nil {
			return fmt.Errorf("no CM REP with the buffer (RLAB) in its private data")
		}
		if writes == 0 || read && reads == 0 || imm && imms == 0 {
			bad = append(bad, fmt.Sprintf("%d WRITEs, %d READ Requests with a RETH, %d WRITEs with Immediate", writes, reads, imms))
		}
		if len(bad) > 0 {
			return fmt.Errorf("%q", bad)
		}
		return nil
	}
}
