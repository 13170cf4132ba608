// SPDX-License-Identifier: MIT
//
// wl_go.go — a Go workload for the tests, built by them with Debian's Go (golang-go, `make
// deps-test`), not by make: `wl_go SECONDS GOROUTINES` runs GOROUTINES goroutines doing CPU
// work in main.spin under runtime/pprof labels (route=/rN), for SECONDS, then exits. Built
// with and without `-ldflags="-s -w"` (no .symtab: its frames are named from .gopclntab).
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

//go:noinline
func spin(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += i * i % 7
	}
	return s
}

func worker(route string, stop <-chan struct{}, wg *sync.WaitGroup) {
	defer wg.Done()
	pprof.Do(context.Background(), pprof.Labels("route", route), func(ctx context.Context) {
		sum := 0
		for {
			sum += spin(100000)
			select {
			case <-stop:
				return
			default:
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
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go worker("/r"+strconv.Itoa(i), stop, &wg)
	}
	time.Sleep(time.Duration(secs) * time.Second)
	close(stop)
	wg.Wait()
}
