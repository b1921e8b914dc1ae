package desktop

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/png"
)

// encodePNG encodes a screenshot as PNG, fast. image/png's encoder tries
// five filters on every row and keeps the best, which costs more than
// the compression itself and most of an observation's own processor
// time; a screenshot of controls, with its flat areas and repeated rows,
// compresses about as well with the Up filter on every row. An image
// that is not opaque goes to image/png.
func encodePNG(img *image.RGBA) ([]byte, error) {
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

	var data bytes.Buffer
	z, err := zlib.NewWriterLevel(&data, zlib.BestSpeed)
	if err != nil {
		return nil, err
	}
	prev := make([]byte, 3*w) // the row above the first is zeros
	row := make([]byte, 1+3*w)
	row[0] = 2 // filter Up: each byte minus the one above it
	for y := b.Min.Y; y < b.Max.Y; y++ {
		pix := img.Pix[img.PixOffset(b.Min.X, y):]
		for x, i := 0, 0; x < w; x, i = x+1, i+3 {
			r, g, bl := pix[4*x], pix[4*x+1], pix[4*x+2]
			row[1+i], row[2+i], row[3+i] = r-prev[i], g-prev[i+1], bl-prev[i+2]
			prev[i], prev[i+1], prev[i+2] = r, g, bl
		}
		if _, err := z.Write(row); err != nil {
			return nil, err
		}
	}
	if err := z.Close(); err != nil {
		return nil, err
	}
	writeChunk(&out, "IDAT", data.Bytes())
	writeChunk(&out, "IEND", nil)
	return out.Bytes(), nil
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
