package desktop

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"hash/adler32"
	"hash/crc32"
	"image"
	"image/png"
	"runtime"
	"sync"
)

// encodePNG encodes a screenshot as PNG, fast. image/png's encoder tries
// five filters on every row and keeps the best, which costs more than
// the compression itself and most of an observation's own processor
// time; a screenshot of controls, with its flat areas and repeated rows,
// compresses about as well with the Up filter on every row. An image
// that is not opaque goes to image/png.
func encodePNG(img *image.RGBA) ([]byte, error) { return encodePNGIn(img, runtime.GOMAXPROCS(0)) }

// encodePNGIn is encodePNG in at most stripes stripes.
func encodePNGIn(img *image.RGBA, stripes int) ([]byte, error) {
	if !img.Opaque() {
		var buf bytes.Buffer
		err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&buf, img)
		return buf.Bytes(), err
	}
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	var out bytes.Buffer
	out.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8], ihdr[9] = 8, 2 // 8 bits per sample, truecolour; deflate, no interlace
	writeChunk(&out, "IHDR", ihdr)

	// The rows are compressed in stripes at once, one per processor: each
	// stripe is a deflate stream of its own ended by a sync flush (the
	// last one closed), so that they join into one stream.
	n := max(1, min(stripes, h/minStripeRows))
	parts := make([]stripe, n)
	var wg sync.WaitGroup
	for i := range parts {
		wg.Go(func() { parts[i].deflate(img, b.Min.Y+h*i/n, b.Min.Y+h*(i+1)/n, i == n-1) })
	}
	wg.Wait()
	var data bytes.Buffer
	data.Write([]byte{0x78, 0x01}) // zlib: deflate, 32 KiB window, fastest
	sum := adler32.Checksum(nil)
	for _, st := range parts {
		if st.err != nil {
			return nil, st.err
		}
		data.Write(st.out.Bytes())
		sum = adlerJoin(sum, st.sum, st.n)
	}
	var tail [4]byte
	binary.BigEndian.PutUint32(tail[:], sum)
	data.Write(tail[:])
	writeChunk(&out, "IDAT", data.Bytes())
	writeChunk(&out, "IEND", nil)
	return out.Bytes(), nil
}

// minStripeRows is the fewest rows worth a stripe of their own.
const minStripeRows = 64

// stripe is rows y0..y1 of a screenshot, filtered and deflated.
type stripe struct {
	out bytes.Buffer
	sum uint32 // the Adler-32 of the filtered rows
	n   int    // their length
	err error
}

// deflate filters rows y0..y1 of img with Up (the row above y0 as the
// first one's reference) and compresses them, flushing at the end, or
// closing the stream if last.
func (st *stripe) deflate(img *image.RGBA, y0, y1 int, last bool) {
	b := img.Bounds()
	w := b.Dx()
	z, err := flate.NewWriter(&st.out, flate.BestSpeed)
	if err != nil {
		st.err = err
		return
	}
	sum := adler32.New()
	prev := make([]byte, 3*w) // the row above the image is zeros
	if y0 > b.Min.Y {
		above := img.Pix[img.PixOffset(b.Min.X, y0-1):]
		for x := range w {
			copy(prev[3*x:3*x+3], above[4*x:4*x+3])
		}
	}
	row := make([]byte, 1+3*w)
	row[0] = 2 // filter Up: each byte minus the one above it
	for y := y0; y < y1; y++ {
		pix := img.Pix[img.PixOffset(b.Min.X, y):]
		for x, i := 0, 0; x < w; x, i = x+1, i+3 {
			r, g, bl := pix[4*x], pix[4*x+1], pix[4*x+2]
			row[1+i], row[2+i], row[3+i] = r-prev[i], g-prev[i+1], bl-prev[i+2]
			prev[i], prev[i+1], prev[i+2] = r, g, bl
		}
		sum.Write(row)
		if _, err := z.Write(row); err != nil {
			st.err = err
			return
		}
	}
	st.sum, st.n = sum.Sum32(), (y1-y0)*len(row)
	if last {
		st.err = z.Close()
	} else {
		st.err = z.Flush()
	}
}

// adlerJoin is the Adler-32 of x followed by y, from theirs and y's
// length n. Adler-32 is A = 1 + the bytes' sum and B = the sum of A after
// each byte, both modulo 65521; after x, each of y's n steps adds A(x)-1
// to y's own.
func adlerJoin(x, y uint32, n int) uint32 {
	const mod = 65521
	ax, bx := uint64(x&0xffff), uint64(x>>16)
	ay, by := uint64(y&0xffff), uint64(y>>16)
	a := (ax + ay + mod - 1) % mod
	bs := (bx + by + uint64(n%mod)*((ax+mod-1)%mod)) % mod
	return uint32(bs<<16 | a)
}

// writeChunk writes one PNG chunk: length, type, data, and the CRC of
// type and data.
func writeChunk(out *bytes.Buffer, kind string, data []byte) {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(data)))
	out.Write(n[:])
	crc := crc32.NewIEEE()
	crc.Write([]byte(kind))
	crc.Write(data)
	out.WriteString(kind)
	out.Write(data)
	binary.BigEndian.PutUint32(n[:], crc.Sum32())
	out.Write(n[:])
}
