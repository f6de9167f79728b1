package symbols

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
)

// ELF note types and owners of the two build ids (debug/elf does not
// define them: its note types are core-file ones).
const (
	noteGNUBuildID = 3 // NT_GNU_BUILD_ID, owner "GNU"
	noteGoBuildID  = 4 // the Go linker's build id note, owner "Go"
	// maxNoteBytes bounds a note section or segment read for build ids.
	maxNoteBytes = 1 << 20
)

// gnuBuildID returns the GNU build id as lowercase hex, "" when the file
// has none: from SHT_NOTE sections, else (section headers stripped) from
// PT_NOTE segments.
func gnuBuildID(f *elf.File) string {
	return hex.EncodeToString(findNote(f, "GNU", noteGNUBuildID, ".note.gnu.build-id"))
}

// ReadBuildID returns the GNU build id of the ELF file r as lowercase
// hex, "" when it has none. It reads the ELF headers and the notes only,
// so it is cheap on a file of any size; a file that is not ELF is an
// error.
func ReadBuildID(r io.ReaderAt) (string, error) {
	f, err := elf.NewFile(r)
	if err != nil {
		return "", fmt.Errorf("not an ELF file: %w", err)
	}
	return gnuBuildID(f), nil
}

// goBuildID returns the Go build id from the .note.go.buildid note, "" when
// there is none (a malformed note counts as none).
func goBuildID(f *elf.File) string {
	desc := findNote(f, "Go", noteGoBuildID, ".note.go.buildid")
	if !isPrintable(desc) {
		return ""
	}
	return string(desc)
}

func isPrintable(b []byte) bool {
	for _, c := range b {
		if c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}

// findNote returns the descriptor of the first note of the owner and type,
// looking in the named section first, then every note section, then every
// note segment.
func findNote(f *elf.File, owner string, typ uint32, section string) []byte {
	var blobs []io.ReaderAt
	var sizes []uint64
	if s := f.Section(section); s != nil && s.Type == elf.SHT_NOTE {
		blobs, sizes = append(blobs, s), append(sizes, s.Size)
	}
	for _, s := range f.Sections {
		if s.Type == elf.SHT_NOTE && s.Name != section {
			blobs, sizes = append(blobs, s), append(sizes, s.Size)
		}
	}
	if len(blobs) == 0 {
		for _, p := range f.Progs {
			if p.Type == elf.PT_NOTE {
				blobs, sizes = append(blobs, p), append(sizes, p.Filesz)
			}
		}
	}
	for i, blob := range blobs {
		if sizes[i] == 0 || sizes[i] > maxNoteBytes {
			continue
		}
		data := make([]byte, sizes[i])
		if n, _ := blob.ReadAt(data, 0); n != len(data) {
			continue // unreadable: another note may still hold it
		}
		if desc, ok := parseNotes(data, f.ByteOrder, owner, typ); ok {
			return desc
		}
	}
	return nil
}

// parseNotes walks ELF notes (namesz, descsz, type, name and descriptor,
// each padded to 4 bytes) for one of the owner and type.
func parseNotes(data []byte, order binary.ByteOrder, owner string, typ uint32) ([]byte, bool) {
	for len(data) >= 12 {
		namesz, descsz, t := order.Uint32(data), order.Uint32(data[4:]), order.Uint32(data[8:])
		data = data[12:]
		nameEnd := align4(uint64(namesz))
		descEnd := nameEnd + align4(uint64(descsz))
		if descEnd > uint64(len(data)) {
			return nil, false
		}
		name := bytes.TrimRight(data[:namesz], "\x00")
		if t == typ && string(name) == owner {
			return data[nameEnd : nameEnd+uint64(descsz)], true
		}
		data = data[descEnd:]
	}
	return nil, false
}

func align4(n uint64) uint64 { return (n + 3) &^ 3 }
