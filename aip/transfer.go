package aip

// The optional file-transfer extension. UFO sends a text frame with one of
// these before binary frames. Saucer decodes and encodes them so that it can
// recognise them; its server and client do not transfer files yet.

// BinaryMetadata announces the binary frame that follows (type
// "binary_data"). ChunkNum and ChunkSize are set when the binary frame is a
// chunk of a file transfer.
type BinaryMetadata struct {
	Type        string  `json:"type"`
	Filename    *string `json:"filename"`
	MimeType    *string `json:"mime_type"`
	Size        int64   `json:"size"`
	Checksum    *string `json:"checksum"`
	SessionID   *string `json:"session_id"`
	Description *string `json:"description"`
	Timestamp   *string `json:"timestamp"`
	ChunkNum    *int    `json:"chunk_num,omitempty"`
	ChunkSize   *int64  `json:"chunk_size,omitempty"`
}

// FileTransferStart opens a chunked file transfer (type
// "file_transfer_start").
type FileTransferStart struct {
	Type        string  `json:"type"`
	Filename    string  `json:"filename"`
	Size        int64   `json:"size"`
	ChunkSize   int64   `json:"chunk_size"`
	TotalChunks int     `json:"total_chunks"`
	MimeType    *string `json:"mime_type"`
	SessionID   *string `json:"session_id"`
	Description *string `json:"description"`
}

// FileTransferComplete closes a chunked file transfer (type
// "file_transfer_complete").
type FileTransferComplete struct {
	Type        string  `json:"type"`
	Filename    string  `json:"filename"`
	TotalChunks int     `json:"total_chunks"`
	Checksum    *string `json:"checksum"`
	SessionID   *string `json:"session_id"`
}

// The type values of the file-transfer frames.
const (
	TypeBinaryData           = "binary_data"
	TypeFileTransferStart    = "file_transfer_start"
	TypeFileTransferComplete = "file_transfer_complete"
)
