package promtext

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"
)

// Runtime returns the Go runtime and process families client_golang's
// default Go and process collectors serve, with the same names, help and
// types, so dashboards built on them keep working. The values come from
// runtime.MemStats and /proc (Linux; elsewhere the process families are
// left out).
func Runtime() []Family {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	gcs := debug.GCStats{PauseQuantiles: make([]time.Duration, 5)}
	debug.ReadGCStats(&gcs)
	samples := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}, {Name: "/sched/gomaxprocs:threads"}}
	metrics.Read(samples)
	u64 := func(i int) float64 {
		if samples[i].Value.Kind() == metrics.KindUint64 {
			return float64(samples[i].Value.Uint64())
		}
		return 0
	}
	threads, _ := runtime.ThreadCreateProfile(nil)
	quantiles := []Quantile{{Q: 0}, {Q: 0.25}, {Q: 0.5}, {Q: 0.75}, {Q: 1}}
	if gcs.NumGC > 0 {
		for i := range quantiles {
			quantiles[i].Value = gcs.PauseQuantiles[i].Seconds()
		}
	}
	var lastGC float64
	if ms.LastGC > 0 {
		lastGC = float64(ms.LastGC) / 1e9
	}
	g := func(name, help string, v float64) Family {
		return Family{Name: name, Help: help, Type: Gauge, Metrics: []Metric{{Value: v}}}
	}
	c := func(name, help string, v float64) Family {
		return Family{Name: name, Help: help, Type: Counter, Metrics: []Metric{{Value: v}}}
	}
	fams := []Family{
		{Name: "go_gc_duration_seconds", Help: "A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles.", Type: Summary,
			Metrics: []Metric{{Quantiles: quantiles, Sum: gcs.PauseTotal.Seconds(), Count: uint64(gcs.NumGC)}}},
		g("go_gc_gogc_percent", "Heap size target percentage configured by the user, otherwise 100. This value is set by the GOGC environment variable, and the runtime/debug.SetGCPercent function. Sourced from /gc/gogc:percent.", u64(0)),
		g("go_gc_gomemlimit_bytes", "Go runtime memory limit configured by the user, otherwise math.MaxInt64. This value is set by the GOMEMLIMIT environment variable, and the runtime/debug.SetMemoryLimit function. Sourced from /gc/gomemlimit:bytes.", u64(1)),
		g("go_goroutines", "Number of goroutines that currently exist.", float64(runtime.NumGoroutine())),
		{Name: "go_info", Help: "Information about the Go environment.", Type: Gauge, Metrics: []Metric{{Labels: []Label{{"version", runtime.Version()}}, Value: 1}}},
		g("go_memstats_alloc_bytes", "Number of bytes allocated in heap and currently in use. Equals to /memory/classes/heap/objects:bytes.", float64(ms.Alloc)),
		c("go_memstats_alloc_bytes_total", "Total number of bytes allocated in heap until now, even if released already. Equals to /gc/heap/allocs:bytes.", float64(ms.TotalAlloc)),
		g("go_memstats_buck_hash_sys_bytes", "Number of bytes used by the profiling bucket hash table. Equals to /memory/classes/profiling/buckets:bytes.", float64(ms.BuckHashSys)),
		c("go_memstats_frees_total", "Total number of heap objects frees. Equals to /gc/heap/frees:objects + /gc/heap/tiny/allocs:objects.", float64(ms.Frees)),
		g("go_memstats_gc_sys_bytes", "Number of bytes used for garbage collection system metadata. Equals to /memory/classes/metadata/other:bytes.", float64(ms.GCSys)),
		g("go_memstats_heap_alloc_bytes", "Number of heap bytes allocated and currently in use, same as go_memstats_alloc_bytes. Equals to /memory/classes/heap/objects:bytes.", float64(ms.HeapAlloc)),
		g("go_memstats_heap_idle_bytes", "Number of heap bytes waiting to be used. Equals to /memory/classes/heap/released:bytes + /memory/classes/heap/free:bytes.", float64(ms.HeapIdle)),
		g("go_memstats_heap_inuse_bytes", "Number of heap bytes that are in use. Equals to /memory/classes/heap/objects:bytes + /memory/classes/heap/unused:bytes", float64(ms.HeapInuse)),
		g("go_memstats_heap_objects", "Number of currently allocated objects. Equals to /gc/heap/objects:objects.", float64(ms.HeapObjects)),
		g("go_memstats_heap_released_bytes", "Number of heap bytes released to OS. Equals to /memory/classes/heap/released:bytes.", float64(ms.HeapReleased)),
		g("go_memstats_heap_sys_bytes", "Number of heap bytes obtained from system. Equals to /memory/classes/heap/objects:bytes + /memory/classes/heap/unused:bytes + /memory/classes/heap/released:bytes + /memory/classes/heap/free:bytes.", float64(ms.HeapSys)),
		g("go_memstats_last_gc_time_seconds", "Number of seconds since 1970 of last garbage collection.", lastGC),
		c("go_memstats_mallocs_total", "Total number of heap objects allocated, both live and gc-ed. Semantically a counter version for go_memstats_heap_objects gauge. Equals to /gc/heap/allocs:objects + /gc/heap/tiny/allocs:objects.", float64(ms.Mallocs)),
		g("go_memstats_mcache_inuse_bytes", "Number of bytes in use by mcache structures. Equals to /memory/classes/metadata/mcache/inuse:bytes.", float64(ms.MCacheInuse)),
		g("go_memstats_mcache_sys_bytes", "Number of bytes used for mcache structures obtained from system. Equals to /memory/classes/metadata/mcache/inuse:bytes + /memory/classes/metadata/mcache/free:bytes.", float64(ms.MCacheSys)),
		g("go_memstats_mspan_inuse_bytes", "Number of bytes in use by mspan structures. Equals to /memory/classes/metadata/mspan/inuse:bytes.", float64(ms.MSpanInuse)),
		g("go_memstats_mspan_sys_bytes", "Number of bytes used for mspan structures obtained from system. Equals to /memory/classes/metadata/mspan/inuse:bytes + /memory/classes/metadata/mspan/free:bytes.", float64(ms.MSpanSys)),
		g("go_memstats_next_gc_bytes", "Number of heap bytes when next garbage collection will take place. Equals to /gc/heap/goal:bytes.", float64(ms.NextGC)),
		g("go_memstats_other_sys_bytes", "Number of bytes used for other system allocations. Equals to /memory/classes/other:bytes.", float64(ms.OtherSys)),
		g("go_memstats_stack_inuse_bytes", "Number of bytes obtained from system for stack allocator in non-CGO environments. Equals to /memory/classes/heap/stacks:bytes.", float64(ms.StackInuse)),
		g("go_memstats_stack_sys_bytes", "Number of bytes obtained from system for stack allocator. Equals to /memory/classes/heap/stacks:bytes + /memory/classes/os-stacks:bytes.", float64(ms.StackSys)),
		g("go_memstats_sys_bytes", "Number of bytes obtained from system. Equals to /memory/classes/total:byte.", float64(ms.Sys)),
		g("go_sched_gomaxprocs_threads", "The current runtime.GOMAXPROCS setting, or the number of operating system threads that can execute user-level Go code simultaneously. Sourced from /sched/gomaxprocs:threads.", u64(2)),
		g("go_threads", "Number of OS threads created.", float64(threads)),
	}
	return append(fams, process()...)
}

// process reads /proc/self as client_golang's process collector does;
// nothing where /proc is missing.
func process() []Family {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return nil
	}
	// Fields after the command, which is in parentheses and may hold
	// spaces: state is field 3, so f[0] is field 3.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return nil
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 22 {
		return nil
	}
	num := func(field int) float64 {
		v, _ := strconv.ParseFloat(f[field-3], 64)
		return v
	}
	const userHZ = 100 // what procfs assumes, as the kernel reports in USER_HZ
	var fams []Family
	g := func(name, help string, v float64) {
		fams = append(fams, Family{Name: name, Help: help, Type: Gauge, Metrics: []Metric{{Value: v}}})
	}
	c := func(name, help string, v float64) {
		fams = append(fams, Family{Name: name, Help: help, Type: Counter, Metrics: []Metric{{Value: v}}})
	}
	c("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", (num(14)+num(15))/userHZ)
	maxFDs, maxAS := limits()
	if maxFDs >= 0 {
		g("process_max_fds", "Maximum number of open file descriptors.", maxFDs)
	}
	if rx, tx, ok := netDev(); ok {
		c("process_network_receive_bytes_total", "Number of bytes received by the process over the network.", rx)
		c("process_network_transmit_bytes_total", "Number of bytes sent by the process over the network.", tx)
	}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		// The directory's own descriptor, open while it is read, is not
		// among the entries ReadDir returns.
		g("process_open_fds", "Number of open file descriptors.", float64(len(fds)))
	}
	g("process_resident_memory_bytes", "Resident memory size in bytes.", num(24)*float64(os.Getpagesize()))
	if bt := bootTime(); bt > 0 {
		g("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", bt+num(22)/userHZ)
	}
	g("process_virtual_memory_bytes", "Virtual memory size in bytes.", num(23))
	if maxAS != 0 {
		g("process_virtual_memory_max_bytes", "Maximum amount of virtual memory available in bytes.", maxAS)
	}
	return fams
}

// limits reads the soft limits of open files and address space (-1 and 0
// when unreadable; "unlimited" is the largest uint64, as procfs reports).
func limits() (maxFDs, maxAS float64) {
	maxFDs = -1
	b, err := os.ReadFile("/proc/self/limits")
	if err != nil {
		return maxFDs, 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		var name string
		switch {
		case strings.HasPrefix(line, "Max open files"):
			name = "Max open files"
		case strings.HasPrefix(line, "Max address space"):
			name = "Max address space"
		default:
			continue
		}
		fields := strings.Fields(line[len(name):])
		if len(fields) == 0 {
			continue
		}
		v := float64(^uint64(0))
		if fields[0] != "unlimited" {
			n, err := strconv.ParseUint(fields[0], 10, 64)
			if err != nil {
				continue
			}
			v = float64(n)
		}
		if name == "Max open files" {
			maxFDs = v
		} else {
			maxAS = v
		}
	}
	return maxFDs, maxAS
}

// netDev sums received and sent bytes over the interfaces of the
// process's network namespace.
func netDev() (rx, tx float64, ok bool) {
	b, err := os.ReadFile("/proc/self/net/dev")
	if err != nil {
		return 0, 0, false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		_, counters, found := strings.Cut(line, ":")
		if !found {
			continue
		}
		f := strings.Fields(counters)
		if len(f) < 9 {
			continue
		}
		r, err1 := strconv.ParseFloat(f[0], 64)
		t, err2 := strconv.ParseFloat(f[8], 64)
		if err1 != nil || err2 != nil {
			continue
		}
		rx, tx = rx+r, tx+t
	}
	return rx, tx, true
}

func bootTime() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			n, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return n
		}
	}
	return 0
}
