/*
 * paimon-lab test helper: write a cross-partition-update primary-key table (dynamic bucket,
 * primary key without all partition keys) through Java Paimon, the way its Flink and Spark sinks
 * route rows: a GlobalIndexAssigner (a RocksDB index key -> (partition, bucket)) is bootstrapped
 * from the table's current rows (IndexBootstrap), then assigns each input row its bucket and, when
 * a key moves partition, emits the retraction of the key's old row into the old partition.
 *
 *   java -cp <oracle classpath>:<rocksdbjni jar>:<classes> CrossPartitionWrite \
 *        <warehouse> <db.table> <rows.jsonl> [<rows.jsonl> ...]
 *
 * Each input file is one commit (with a fresh assigner bootstrapped from the table as committed so
 * far). A line is a flat JSON object: column name -> value (integers as numbers, strings as strings,
 * null), with an optional "_row_kind" (+I, -U, +U, -D). Supported column types: BOOLEAN, TINYINT,
 * SMALLINT, INT, BIGINT, DOUBLE, CHAR, VARCHAR/STRING. Every record the assigner emits is printed as
 * a JSON line {"commit": i, "kind": "+I", "bucket": b, "row": {...}}.
 */

import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.crosspartition.GlobalIndexAssigner;
import org.apache.paimon.crosspartition.IndexBootstrap;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.options.Options;
import org.apache.paimon.table.BucketMode;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.sink.TableWriteImpl;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.RowKind;
import org.apache.paimon.types.RowType;
import org.apache.paimon.utils.JsonSerdeUtil;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

public class CrossPartitionWrite {

    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: CrossPartitionWrite <warehouse> <db.table> <rows.jsonl>...");
            System.exit(2);
        }
        Options catalogOptions = new Options();
        catalogOptions.set("warehouse", args[0]);
        PrintStream out = new PrintStream(System.out, false, "UTF-8");
        try (Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(catalogOptions))) {
            Identifier id = Identifier.fromString(args[1]);
            for (int i = 2; i < args.length; i++) {
                // re-read the table: the assigner bootstraps from the latest snapshot
                FileStoreTable table = (FileStoreTable) catalog.getTable(id);
                if (table.bucketMode() != BucketMode.CROSS_PARTITION) {
                    throw new IllegalArgumentException(args[1] + " is not a cross-partition-update table: "
                            + "its bucket mode is " + table.bucketMode());
                }
                commit(table, parse(table.rowType(), Paths.get(args[i])), i - 2, out);
            }
        }
        out.flush();
    }

    static void commit(FileStoreTable table, List<GenericRow> rows, int commit, PrintStream out) throws Exception {
        RowType rowType = table.rowType();
        Path tmp = Files.createTempDirectory("xpart-io");
        BatchWriteBuilder builder = table.newBatchWriteBuilder();
        try (IOManager io = IOManager.create(tmp.toString());
             TableWriteImpl<?> write = (TableWriteImpl<?>) builder.newWrite();
             BatchTableCommit committer = builder.newCommit();
             GlobalIndexAssigner assigner = new GlobalIndexAssigner(table)) {
            write.withIOManager(io);
            // one assigner (numAssigners 1, id 0) sees every key; 64 MB for its RocksDB cache
            assigner.open(64L << 20, io, 1, 0, (row, bucket) -> {
                out.println(render(commit, row, bucket, rowType));
                try {
                    write.write(row, bucket);
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            // the index of the keys already in the table: (key, partition, bucket) rows
            new IndexBootstrap(table).bootstrap(1, 0, keyPart -> {
                try {
                    assigner.bootstrapKey(keyPart);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
            // as a bounded Flink job: the input is buffered during the bootstrap, routed at its end
            for (GenericRow row : rows) {
                assigner.processInput(row);
            }
            assigner.endBoostrap(true);
            committer.commit(write.prepareCommit());
        } finally {
            deleteTree(tmp);
        }
    }

    @SuppressWarnings("unchecked")
    static List<GenericRow> parse(RowType rowType, Path input) throws IOException {
        List<GenericRow> rows = new ArrayList<>();
        for (String line : Files.readAllLines(input, StandardCharsets.UTF_8)) {
            if (line.trim().isEmpty()) {
                continue;
            }
            Map<String, Object> json = JsonSerdeUtil.fromJson(line, LinkedHashMap.class);
            for (String name : json.keySet()) {
                if (!name.equals("_row_kind") && !rowType.getFieldNames().contains(name)) {
                    throw new IllegalArgumentException("unknown column " + name + " in " + line);
                }
            }
            Object kind = json.get("_row_kind");
            GenericRow row = new GenericRow(
                    kind == null ? RowKind.INSERT : RowKind.fromShortString((String) kind), rowType.getFieldCount());
            for (int i = 0; i < rowType.getFieldCount(); i++) {
                DataField field = rowType.getFields().get(i);
                row.setField(i, internal(json.get(field.name()), field.type()));
            }
            rows.add(row);
        }
        return rows;
    }

    static Object internal(Object v, DataType type) {
        if (v == null) {
            return null;
        }
        switch (type.getTypeRoot()) {
            case BOOLEAN: return (Boolean) v;
            case TINYINT: return ((Number) v).byteValue();
            case SMALLINT: return ((Number) v).shortValue();
            case INTEGER: return ((Number) v).intValue();
            case BIGINT: return ((Number) v).longValue();
            case DOUBLE: return ((Number) v).doubleValue();
            case CHAR:
            case VARCHAR: return BinaryString.fromString((String) v);
            default: throw new UnsupportedOperationException("CrossPartitionWrite does not take " + type + " columns");
        }
    }

    static String render(int commit, InternalRow row, int bucket, RowType rowType) {
        StringBuilder sb = new StringBuilder();
        sb.append("{\"commit\": ").append(commit)
                .append(", \"kind\": \"").append(row.getRowKind().shortString())
                .append("\", \"bucket\": ").append(bucket).append(", \"row\": {");
        for (int i = 0; i < rowType.getFieldCount(); i++) {
            DataField field = rowType.getFields().get(i);
            sb.append(i == 0 ? "" : ", ").append(quote(field.name())).append(": ");
            Object v = InternalRow.createFieldGetter(field.type(), i).getFieldOrNull(row);
            if (v == null) {
                sb.append("null");
            } else if (v instanceof BinaryString) {
                sb.append(quote(v.toString()));
            } else {
                sb.append(v);
            }
        }
        return sb.append("}}").toString();
    }

    static String quote(String s) {
        StringBuilder sb = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                sb.append('\\').append(c);
            } else if (c < 0x20) {
                sb.append(String.format("\\u%04x", (int) c));
            } else {
                sb.append(c);
            }
        }
        return sb.append('"').toString();
    }

    static void deleteTree(Path dir) throws IOException {
        try (java.util.stream.Stream<Path> paths = Files.walk(dir)) {
            paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }
}
