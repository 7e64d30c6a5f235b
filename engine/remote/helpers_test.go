package remote

import (
	"bufio"
	"strings"
)

func bufioReader(s string) *bufio.Reader { return bufio.NewReaderSize(strings.NewReader(s), 4096) }
