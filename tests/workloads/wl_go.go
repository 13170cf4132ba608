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
// named from .gopclntab; no DWARF: its labels layout from its Go version).
package main

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"sync"
	"time"
)

// spin keeps a stack frame (the array indexed at run time): a Go function without one
// does not save the frame pointer, and a frame-pointer unwind then skips its caller.
//
//go:noinline
func spin(n int) int {
	var acc [8]int
	for i := 0; i < n; i++ {
		acc[i&7] += i * i % 7
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
