// SPDX-License-Identifier: MIT
//
// wl_go.go — a Go workload for the tests, built by them with Debian's Go (golang-go, `make
// deps-test`), not by make: `wl_go SECONDS GOROUTINES` runs GOROUTINES goroutines doing CPU
// work in main.spin for SECONDS, then exits. Goroutine i works under runtime/pprof labels
// route=/rI, parity=even|odd (of I) and phase=early for the first half of the time, late
// for the second, with a span id (span_id=0xa000+I in hex early; "span id"=0xb000+I in
// decimal and "local root span id"=7 late, as tracers set them), and reaches main.spin through a function named for its parity and phase
// (main.evenEarly, main.oddLate, ...), so a profile shows whether each sample's labels are
// its goroutine's. Built with and without `-ldflags="-s -w"` (no .symtab: its frames are
// named from .gopclntab; no DWARF: its labels layout from its Go version). With
// WL_GO_SERVICE=NAME set it first publishes an OpenTelemetry process context (OTEP 4719)
// whose resource's service.name is NAME, from Go alone, as a Go SDK would.
package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// mix is inlined into spin: a profile names it as an inlined frame (from DWARF, or from
// the .gopclntab's inline tree when stripped).
func mix(a, i int) int {
	return a + i*i%7
}

// spin keeps a stack frame (the array indexed at run time): a Go function without one
// does not save the frame pointer, and a frame-pointer unwind then skips its caller.
//
//go:noinline
func spin(n int) int {
	var acc [8]int
	for i := 0; i < n; i++ {
		acc[i&7] = mix(acc[i&7], i)
	}
	return acc[n&7]
}

//go:noinline
func evenEarly() int { return spin(100000) }

//go:noinline
func oddEarly() int { return spin(100000) }

//go:noinline
func evenLate() int { return spin(100000) }

//go:noinline
func oddLate() int { return spin(100000) }

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func worker(i int, half, stop <-chan struct{}, wg *sync.WaitGroup) {
	defer wg.Done()
	route, parity := "/r"+strconv.Itoa(i), "even"
	if i%2 == 1 {
		parity = "odd"
	}
	sum := 0
	// a tracer's span as goroutine labels: OpenTelemetry's hex form (otel-profiling-go)
	// early, dd-trace-go's decimal "span id" and "local root span id" late
	early := pprof.Labels("route", route, "parity", parity, "phase", "early",
		"span_id", fmt.Sprintf("%016x", 0xa000+i))
	late := pprof.Labels("route", route, "parity", parity, "phase", "late",
		"span id", strconv.Itoa(0xb000+i), "local root span id", "7")
	pprof.Do(context.Background(), early,
		func(ctx context.Context) {
			for !closed(half) && !closed(stop) {
				if i%2 == 1 {
					sum += oddEarly()
				} else {
					sum += evenEarly()
				}
			}
		})
	pprof.Do(context.Background(), late,
		func(ctx context.Context) {
			for !closed(stop) {
				if i%2 == 1 {
					sum += oddLate()
				} else {
					sum += evenLate()
				}
			}
		})
}

// OTEP 4719: a page of a memfd named OTEL_CTX holding a 32-byte header {signature "OTEL_CTX",
// version 2, payload size, published_at (ns, 0 while being written), payload address}, then
// the payload: ProcessContext{resource: Resource{attributes: [KeyValue service.name]}}.
const (
	mfdCloexec     = 1
	sysMemfdCreate = 319 // linux/amd64
	pctxVersion    = 2
	pctxHeader     = 32
)

func pbBytes(field int, b []byte) []byte {
	out := []byte{byte(field<<3 | 2)}
	for n := len(b); ; n >>= 7 {
		if n < 0x80 {
			out = append(out, byte(n))
			break
		}
		out = append(out, byte(n|0x80))
	}
	return append(out, b...)
}

// the mapping, kept alive for the process's life (the reader finds it in /proc/PID/maps)
var pctxPage []byte

func publishProcessContext(service string) error {
	anyValue := pbBytes(1, []byte(service))
	kv := append(pbBytes(1, []byte("service.name")), pbBytes(2, anyValue)...)
	payload := pbBytes(1, pbBytes(1, kv))
	// a memfd named OTEL_CTX, mapped privately, as libctx does (an anonymous mapping
	// named by prctl needs CONFIG_ANON_VMA_NAME)
	name := []byte("OTEL_CTX\x00")
	fd, _, e := syscall.Syscall(sysMemfdCreate, uintptr(unsafe.Pointer(&name[0])),
		mfdCloexec, 0)
	if e != 0 {
		return e
	}
	defer syscall.Close(int(fd))
	if err := syscall.Ftruncate(int(fd), 4096); err != nil {
		return err
	}
	page, err := syscall.Mmap(int(fd), 0, 4096, syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE)
	if err != nil {
		return err
	}
	copy(page[pctxHeader:], payload)
	binary.LittleEndian.PutUint32(page[8:], pctxVersion)
	binary.LittleEndian.PutUint32(page[12:], uint32(len(payload)))
	binary.LittleEndian.PutUint64(page[24:], uint64(uintptr(unsafe.Pointer(&page[pctxHeader]))))
	copy(page[0:8], "OTEL_CTX")
	binary.LittleEndian.PutUint64(page[16:], uint64(time.Now().UnixNano()))
	pctxPage = page
	return nil
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: wl_go SECONDS GOROUTINES")
		os.Exit(2)
	}
	secs, err1 := strconv.Atoi(os.Args[1])
	n, err2 := strconv.Atoi(os.Args[2])
	if err1 != nil || err2 != nil || secs < 0 || n < 1 {
		fmt.Fprintln(os.Stderr, "wl_go: bad arguments")
		os.Exit(2)
	}
	if svc := os.Getenv("WL_GO_SERVICE"); svc != "" {
		if err := publishProcessContext(svc); err != nil {
			fmt.Fprintln(os.Stderr, "wl_go: process context:", err)
			os.Exit(1)
		}
	}
	half, stop := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go worker(i, half, stop, &wg)
	}
	time.Sleep(time.Duration(secs) * time.Second / 2)
	close(half)
	time.Sleep(time.Duration(secs) * time.Second / 2)
	close(stop)
	wg.Wait()
}
