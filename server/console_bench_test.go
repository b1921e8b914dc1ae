package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/server"
	"github.com/saucerhq/saucer/server/store"
)

// BenchmarkConsoleMemory measures what an open console costs the server:
// the heap and stacks that N open server streams (GET /api/events, read
// past their snapshot of 1,000 tasks and 100 devices) add, per stream.
// The count includes each stream's loopback client in this process (a
// connection and a 4 KiB reader), so it is an upper bound.
func BenchmarkConsoleMemory(b *testing.B) {
	st := store.NewMemory()
	ctx := context.Background()
	now := time.Now().UTC().Add(-time.Hour)
	for i := 0; i < 100; i++ {
		id := fmt.Sprintf("device-%03d", i)
		data, _ := json.Marshal(map[string]any{"id": id, "client_type": "device", "platform": "linux", "device_info": command.DeviceInfo{Platform: "linux", Hostname: id}})
		st.PutDevice(ctx, store.Device{ID: id, UpdatedAt: now, Data: data})
	}
	for i := 0; i < 1000; i++ {
		created := now.Add(time.Duration(i) * time.Second)
		info := server.TaskInfo{ID: fmt.Sprintf("task-%04d", i), ClientID: fmt.Sprintf("device-%03d", i%100), Request: "list the largest files",
			Status: server.StatusCompleted, CreatedAt: created, EndedAt: &created}
		data, _ := json.Marshal(info)
		st.PutTask(ctx, store.Task{ID: info.ID, ClientID: info.ClientID, Status: string(info.Status), CreatedAt: created, Data: data}, true)
	}
	f := newFixture(b, server.Options{Store: st})
	addr := strings.TrimPrefix(f.http.URL, "http://")
	const consoles = 50
	measure := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse + m.StackInuse
	}
	b.ResetTimer()
	var per float64
	for i := 0; i < b.N; i++ {
		before := measure()
		var conns []net.Conn
		for c := 0; c < consoles; c++ {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			fmt.Fprintf(conn, "GET /api/events HTTP/1.1\r\nHost: %s\r\nX-API-Key: %s\r\n\r\n", addr, token)
			r := bufio.NewReaderSize(conn, 4096)
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					b.Fatal(err)
				}
				if strings.HasPrefix(line, "event: snapshot") {
					r.ReadString('\n') // its data
					break
				}
			}
			conns = append(conns, conn)
		}
		after := measure()
		per = float64(after-before) / consoles
		for _, c := range conns {
			c.Close()
		}
	}
	b.ReportMetric(per, "bytes/console")
}
