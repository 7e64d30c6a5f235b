package roce

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/rlab-dev/rlab/engine/rundir"
	"io"
	"time"

	"github.com/google/gopacket/pcapgo"
)

// ScanResult says how reading a capture file ended.
type ScanResult struct {
	Frames int
	// CutShort is set when the file ends in the middle of a frame (tcpdump
	// killed before it flushed): every whole frame was still read.
	CutShort bool
}

// ScanFile reads the pcap or pcapng file at path and calls fn with each
// frame decoded into one reused Packet (fn must copy what it keeps).
func ScanFile(path string, fn func(*Packet) error) (ScanResult, error) {
	f, err := rundir.OpenFile(path) // a FIFO named *.pcap must not hang
	if err != nil {
		return ScanResult{}, fmt.Errorf("read capture: %w", err)
	}
	defer f.Close()
	res, err := Scan(f, fn)
	if err != nil {
		return res, fmt.Errorf("read capture %q: %w", path, err)
	}
	return res, nil
}

// ScanFileParallel is ScanFile with the decoding spread over workers
// goroutines (ScanParallel): the same packets, in the same order.
func ScanFileParallel(path string, workers int, fn func(*Packet) error) (ScanResult, error) {
	f, err := rundir.OpenFile(path)
	if err != nil {
		return ScanResult{}, fmt.Errorf("read capture: %w", err)
	}
	defer f.Close()
	res, err := ScanParallel(f, workers, fn)
	if err != nil {
		return res, fmt.Errorf("read capture %q: %w", path, err)
	}
	return res, nil
}

// Scan is ScanFile on an open reader (a pcap, pcapng or gzipped pcap).
func Scan(r io.Reader, fn func(*Packet) error) (ScanResult, error) {
	var res ScanResult
	next, err := frameSource(r)
	if err != nil {
		return res, err
	}
	var p Packet
	for {
		data, ts, wire, link, err := next()
		if err == io.EOF {
			return res, nil
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			res.CutShort = true
			return res, nil
		}
		if err != nil {
			return res, fmt.Errorf("frame %d: %w", res.Frames+1, err)
		}
		res.Frames++
		p.Number, p.Time = res.Frames, ts
		Decode(link, data, wire, &p)
		p.ord = int64(res.Frames)
		if err := fn(&p); err != nil {
			return res, err
		}
	}
}

// frameFunc returns the next frame of a capture: its captured bytes (valid
// until the next call), time, length on the wire and link type.
type frameFunc func() (data []byte, ts time.Time, wire, link int, err error)

// frameSource reads a capture's file header and returns its frames one by one.
func frameSource(r io.Reader) (frameFunc, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	magic, err := br.Peek(4)
	if err != nil {
		return nil, fmt.Errorf("read file header: %w", err)
	}
	if string(magic) == "\x0a\x0d\x0d\x0a" {
		ng, err := pcapgo.NewNgReader(newNgGuard(br), pcapgo.DefaultNgReaderOptions)
		if err != nil {
			return nil, fmt.Errorf("read pcapng header: %w", err)
		}
		var links []int
		return func() ([]byte, time.Time, int, int, error) {
			data, ci, err := ng.ZeroCopyReadPacketData()
			if err != nil {
				return nil, time.Time{}, 0, 0, err
			}
			if ci.InterfaceIndex >= len(links) {
				links = links[:0]
				for i := 0; i < ng.NInterfaces(); i++ {
					ifc, _ := ng.Interface(i)
					links = append(links, int(ifc.LinkType))
				}
			}
			link := -1
			if ci.InterfaceIndex < len(links) {
				link = links[ci.InterfaceIndex]
			}
			return data, ci.Timestamp, ci.Length, link, nil
		}, nil
	}
	classicHeader, _ := br.Peek(24)
	classicHeader = append([]byte(nil), classicHeader...)
	pr, err := pcapgo.NewReader(br)
	if err != nil {
		return nil, fmt.Errorf("read pcap header: %w", err)
	}
	// Some writers record snaplen 0 or smaller than their frames;
	// trust the frames, as tshark does.
	pr.SetSnaplen(1 << 18)
	link := int(pr.LinkType())
	// gopacket v1.1.19 keeps the link type in a uint8, so LINUX_SLL2
	// (276, what tcpdump -i any writes) would read as 20: take it from
	// the file header's last field (low 16 bits) instead.
	// (A gzipped file has another magic and keeps gopacket's value.)
	if hdr := classicHeader; len(hdr) == 24 {
		switch {
		case hdr[0] == 0xa1 && hdr[1] == 0xb2:
			link = int(binary.BigEndian.Uint32(hdr[20:24]) & 0xffff)
		case hdr[3] == 0xa1 && hdr[2] == 0xb2:
			link = int(binary.LittleEndian.Uint32(hdr[20:24]) & 0xffff)
		}
	}
	return func() ([]byte, time.Time, int, int, error) {
		data, ci, err := pr.ZeroCopyReadPacketData()
		if err != nil {
			return nil, time.Time{}, 0, 0, err
		}
		return data, ci.Timestamp, ci.Length, link, nil
	}, nil
}
