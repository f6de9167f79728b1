package chembed

import (
	"encoding/binary"
	"strings"
)

// helloQuery is the statement clickhouse-go sends over HTTP when it
// connects. Its answer is decoded at the client's protocol revision, while
// libchdb only writes revision-0 Native blocks (no BlockInfo, no
// serialization-kind byte), so the server answers it itself.
const helloQuery = "SELECT displayName(), version(), revision(), timezone()"

func isHello(sql string) bool { return strings.TrimSpace(sql) == helloQuery }

// serverInfo is what the hello reports.
type serverInfo struct {
	displayName string
	version     string
	timezone    string
}

// minRevisionWithCustomSerialization is DBMS_MIN_REVISION_WITH_CUSTOM_SERIALIZATION:
// from this revision on, each column header carries a "has custom
// serialization" byte.
const minRevisionWithCustomSerialization = 54454

// helloBlock encodes the hello answer as one Native block at the client's
// revision. It reports revision() = 0, so that the client decodes every
// later response at revision 0, which is exactly what libchdb emits.
// Inserts are encoded at revision 0 by clickhouse-go anyway.
func helloBlock(info serverInfo, clientRevision uint64) []byte {
	var b []byte
	putUvarint := func(v uint64) { b = binary.AppendUvarint(b, v) }
	putString := func(s string) { putUvarint(uint64(len(s))); b = append(b, s...) }
	if clientRevision > 0 {
		// BlockInfo: field 1 is_overflows=false, field 2 bucket_num=-1, end.
		putUvarint(1)
		b = append(b, 0)
		putUvarint(2)
		b = binary.LittleEndian.AppendUint32(b, 0xFFFFFFFF)
		putUvarint(0)
	}
	putUvarint(4) // columns
	putUvarint(1) // rows
	column := func(name, typ string, data func()) {
		putString(name)
		putString(typ)
		if clientRevision >= minRevisionWithCustomSerialization {
			b = append(b, 0)
		}
		data()
	}
	column("displayName()", "String", func() { putString(info.displayName) })
	column("version()", "String", func() { putString(info.version) })
	column("revision()", "UInt32", func() { b = binary.LittleEndian.AppendUint32(b, 0) })
	column("timezone()", "String", func() { putString(info.timezone) })
	return b
}
