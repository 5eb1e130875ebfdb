/*
 * Java Paimon as a benchmark peer (bench/jvm.py starts it): one long-lived JVM per worker process,
 * one JSON command per line on stdin, one JSON reply per line on stdout.
 *
 * Every timed command measures inside the JVM, around the Paimon operation only: System.nanoTime,
 * the process's CPU time (all threads: GC and JIT included), the resident-set high-water mark
 * (reset through /proc/self/clear_refs right before) and the heap pools' peak usage. Loading input
 * rows (an Arrow IPC file -> BinaryRows in memory) and writing read results out (BinaryRows -> an
 * Arrow IPC file, for the harness's verification) happen outside that window.
 *
 * Commands ("op"):
 *   create   {warehouse, table, fields: [[name, TYPE]], partition_keys, primary_keys, options}
 *   load     {name, path}                 rows of an Arrow IPC file into memory (untimed)
 *   drop     {name}                       forget loaded rows
 *   write    {warehouse, table, rows}     timed: one batch write + commit of loaded rows
 *   read     {warehouse, table, filter?, out?}  timed: plan + read + copy every row (BinaryRow)
 *   count    {warehouse, table, filter?}  timed: plan + read, counting the rows
 *   compact  {warehouse, table}           timed: full compaction of every partition and bucket
 *   version  {}
 * A filter is a list of conjuncts {column, op: "=" | "between", value | [lo, hi]}.
 */

import org.apache.paimon.arrow.ArrowUtils;
import org.apache.paimon.arrow.reader.ArrowBatchReader;
import org.apache.paimon.arrow.writer.ArrowFieldWriter;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.data.serializer.InternalRowSerializer;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.options.Options;
import org.apache.paimon.predicate.Predicate;
import org.apache.paimon.predicate.PredicateBuilder;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypes;
import org.apache.paimon.types.RowType;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowFileReader;
import org.apache.arrow.vector.ipc.ArrowFileWriter;

import java.io.BufferedReader;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

public class BenchDriver {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Map<String, List<InternalRow>> LOADED = new HashMap<>();
    private static final Map<String, Catalog> CATALOGS = new HashMap<>();
    private static final com.sun.management.OperatingSystemMXBean OS =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

    public static void main(String[] args) throws Exception {
        // Replies go to the real stdout; anything a library prints goes to stderr.
        PrintStream out = new PrintStream(new FileOutputStream(java.io.FileDescriptor.out), true, "UTF-8");
        System.setOut(System.err);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) continue;
            ObjectNode reply = JSON.createObjectNode();
            try {
                handle(JSON.readTree(line), reply);
            } catch (Throwable e) {
                StringWriter trace = new StringWriter();
                e.printStackTrace(new PrintWriter(trace));
                reply.removeAll();
                reply.put("error", trace.toString());
            }
            out.println(JSON.writeValueAsString(reply));
        }
        System.exit(0); // do not wait for Paimon's non-daemon pool threads
    }

    static void handle(JsonNode cmd, ObjectNode reply) throws Exception {
        String op = cmd.get("op").asText();
        switch (op) {
            case "version": reply.put("version", version()); return;
            case "create": create(cmd); return;
            case "load": reply.put("rows", load(cmd.get("name").asText(), cmd.get("path").asText())); return;
            case "drop": LOADED.remove(cmd.get("name").asText()); return;
            case "write": write(cmd, reply); return;
            case "read": read(cmd, reply, false); return;
            case "count": read(cmd, reply, true); return;
            case "compact": compact(cmd, reply); return;
            default: throw new IllegalArgumentException("unknown op " + op);
        }
    }

    // ------------------------------------------------------------------ measurement

    /** Runs {@code body} between the clocks; its measurements go into {@code reply}. */
    static <T> T timed(ObjectNode reply, Callable<T> body) throws Exception {
        System.gc(); // garbage of loading/setup is not the operation's
        List<MemoryPoolMXBean> heap = new ArrayList<>();
        for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
            if (pool.getType() == MemoryType.HEAP) {
                pool.resetPeakUsage();
                heap.add(pool);
            }
        }
        long rssBefore = status("VmRSS");
        boolean reset = resetPeak();
        long cpu0 = OS.getProcessCpuTime();
        long t0 = System.nanoTime();
        T result = body.call();
        long t1 = System.nanoTime();
        long cpu1 = OS.getProcessCpuTime();
        long peak = status("VmHWM");
        long heapPeak = 0;
        for (MemoryPoolMXBean pool : heap) heapPeak += pool.getPeakUsage().getUsed();
        reply.put("seconds", (t1 - t0) / 1e9);
        reply.put("cpu_seconds", (cpu1 - cpu0) / 1e9);
        reply.put("rss_before", rssBefore);
        reply.put("peak_rss", peak);
        reply.put("peak_is_op_only", reset);
        reply.put("heap_peak", heapPeak);
        return result;
    }

    static boolean resetPeak() {
        try (FileOutputStream f = new FileOutputStream("/proc/self/clear_refs")) {
            f.write('5');
            return true;
        } catch (Exception e) {
            return false;
        }
    }

    /** A /proc/self/status memory figure in bytes (-1 where there is none). */
    static long status(String key) {
        try {
            for (String l : Files.readAllLines(Paths.get("/proc/self/status"))) {
                if (l.startsWith(key + ":")) return Long.parseLong(l.split("\\s+")[1]) * 1024;
            }
        } catch (Exception ignored) {
        }
        return -1;
    }

    // ------------------------------------------------------------------ tables

    static Catalog catalog(String warehouse) {
        return CATALOGS.computeIfAbsent(warehouse, w -> {
            Options o = new Options();
            o.set("warehouse", w);
            return CatalogFactory.createCatalog(CatalogContext.create(o));
        });
    }

    static FileStoreTable table(JsonNode cmd) throws Exception {
        return (FileStoreTable) catalog(cmd.get("warehouse").asText()).getTable(Identifier.fromString(cmd.get("table").asText()));
    }

    static DataType type(String name) {
        switch (name) {
            case "BIGINT": return DataTypes.BIGINT();
            case "INT": return DataTypes.INT();
            case "DOUBLE": return DataTypes.DOUBLE();
            case "STRING": return DataTypes.STRING();
            case "BOOLEAN": return DataTypes.BOOLEAN();
            default: throw new IllegalArgumentException("type " + name + " is not supported by the bench driver");
        }
    }

    static List<String> strings(JsonNode array) {
        List<String> out = new ArrayList<>();
        if (array != null) array.forEach(n -> out.add(n.asText()));
        return out;
    }

    static void create(JsonNode cmd) throws Exception {
        Schema.Builder schema = Schema.newBuilder();
        for (JsonNode f : cmd.get("fields")) schema.column(f.get(0).asText(), type(f.get(1).asText()));
        schema.partitionKeys(strings(cmd.get("partition_keys")));
        List<String> pk = strings(cmd.get("primary_keys"));
        if (!pk.isEmpty()) schema.primaryKey(pk);
        cmd.get("options").fields().forEachRemaining(e -> schema.option(e.getKey(), e.getValue().asText()));
        Catalog catalog = catalog(cmd.get("warehouse").asText());
        Identifier id = Identifier.fromString(cmd.get("table").asText());
        catalog.createDatabase(id.getDatabaseName(), true);
        catalog.createTable(id, schema.build(), false);
    }

    // ------------------------------------------------------------------ rows in and out (untimed)

    static int load(String name, String path) throws Exception {
        List<InternalRow> rows = new ArrayList<>();
        try (BufferAllocator alloc = new RootAllocator();
             FileInputStream file = new FileInputStream(path);
             ArrowFileReader reader = new ArrowFileReader(file.getChannel(), alloc)) {
            VectorSchemaRoot root = reader.getVectorSchemaRoot();
            RowType rowType = null;
            InternalRowSerializer copier = null;
            while (reader.loadNextBatch()) {
                if (rowType == null) {
                    List<DataType> types = new ArrayList<>();
                    List<String> names = new ArrayList<>();
                    for (FieldVector v : root.getFieldVectors()) {
                        names.add(v.getName());
                        types.add(arrowType(v));
                    }
                    rowType = RowType.of(types.toArray(new DataType[0]), names.toArray(new String[0]));
                    copier = new InternalRowSerializer(rowType);
                }
                for (InternalRow row : new ArrowBatchReader(rowType).readBatch(root)) rows.add(copier.toBinaryRow(row).copy());
            }
        }
        LOADED.put(name, rows);
        return rows.size();
    }

    static DataType arrowType(FieldVector v) {
        switch (v.getMinorType()) {
            case BIGINT: return DataTypes.BIGINT();
            case INT: return DataTypes.INT();
            case FLOAT8: return DataTypes.DOUBLE();
            case VARCHAR: return DataTypes.STRING();
            case BIT: return DataTypes.BOOLEAN();
            default: throw new IllegalArgumentException("Arrow type " + v.getMinorType() + " is not supported by the bench driver");
        }
    }

    static void save(List<InternalRow> rows, RowType rowType, String path) throws Exception {
        int batch = 65536;
        try (BufferAllocator alloc = new RootAllocator();
             VectorSchemaRoot root = ArrowUtils.createVectorSchemaRoot(rowType, alloc, true);
             FileOutputStream file = new FileOutputStream(path);
             ArrowFileWriter writer = new ArrowFileWriter(root, null, file.getChannel())) {
            ArrowFieldWriter[] fields = ArrowUtils.createArrowFieldWriters(root, rowType);
            writer.start();
            for (int start = 0; start < rows.size() || start == 0; start += batch) {
                int n = Math.min(batch, rows.size() - start);
                for (ArrowFieldWriter f : fields) f.reset();
                for (int i = 0; i < n; i++) {
                    InternalRow row = rows.get(start + i);
                    for (int c = 0; c < fields.length; c++) fields[c].write(i, row, c);
                }
                root.setRowCount(n);
                writer.writeBatch();
                if (rows.isEmpty()) break;
            }
            writer.end();
        }
    }

    // ------------------------------------------------------------------ operations (timed)

    static void write(JsonNode cmd, ObjectNode reply) throws Exception {
        FileStoreTable table = table(cmd);
        List<InternalRow> rows = LOADED.get(cmd.get("rows").asText());
        if (rows == null) throw new IllegalArgumentException("no loaded rows named " + cmd.get("rows").asText());
        String tmp = cmd.has("tmp") ? cmd.get("tmp").asText() : System.getProperty("java.io.tmpdir");
        timed(reply, () -> {
            BatchWriteBuilder builder = table.newBatchWriteBuilder();
            try (IOManager io = IOManager.create(tmp);
                 BatchTableWrite write = builder.newWrite();
                 BatchTableCommit commit = builder.newCommit()) {
                write.withIOManager(io);
                for (InternalRow row : rows) write.write(row);
                commit.commit(write.prepareCommit());
            }
            return null;
        });
        reply.put("rows", rows.size());
    }

    static Predicate predicate(RowType rowType, JsonNode filter) {
        if (filter == null || filter.isNull() || filter.size() == 0) return null;
        PredicateBuilder pb = new PredicateBuilder(rowType);
        List<Predicate> parts = new ArrayList<>();
        for (JsonNode c : filter) {
            int idx = pb.indexOf(c.get("column").asText());
            if (idx < 0) throw new IllegalArgumentException("no column " + c.get("column").asText());
            DataType t = rowType.getTypeAt(idx);
            String op = c.get("op").asText();
            if (op.equals("=")) {
                parts.add(pb.equal(idx, literal(t, c.get("value"))));
            } else if (op.equals("between")) {
                parts.add(pb.between(idx, literal(t, c.get("value").get(0)), literal(t, c.get("value").get(1))));
            } else {
                throw new IllegalArgumentException("filter op " + op + " is not supported by the bench driver");
            }
        }
        return PredicateBuilder.and(parts);
    }

    static Object literal(DataType type, JsonNode v) {
        Object java = v.isTextual() ? v.asText() : v.isIntegralNumber() ? (Object) v.asLong() : (Object) v.asDouble();
        return PredicateBuilder.convertJavaObject(type, java);
    }

    static void read(JsonNode cmd, ObjectNode reply, boolean countOnly) throws Exception {
        Table table = table(cmd);
        RowType rowType = table.rowType();
        Predicate filter = predicate(rowType, cmd.get("filter"));
        InternalRowSerializer copier = new InternalRowSerializer(rowType);
        List<InternalRow> rows = new ArrayList<>();
        long count = timed(reply, () -> {
            ReadBuilder rb = table.newReadBuilder();
            if (filter != null) rb.withFilter(filter);
            List<Split> splits = rb.newScan().plan().splits();
            long n = 0;
            // executeFilter: rows that do not match are dropped (the filter is otherwise only used to skip files)
            try (RecordReader<InternalRow> reader = rb.newRead().executeFilter().createReader(splits)) {
                RecordReader.RecordIterator<InternalRow> batch;
                while ((batch = reader.readBatch()) != null) {
                    InternalRow row;
                    while ((row = batch.next()) != null) {
                        if (!countOnly) rows.add(copier.copy(row));
                        n++;
                    }
                    batch.releaseBatch();
                }
            }
            return n;
        });
        reply.put("rows", count);
        if (!countOnly && cmd.hasNonNull("out")) save(rows, rowType, cmd.get("out").asText());
    }

    static void compact(JsonNode cmd, ObjectNode reply) throws Exception {
        FileStoreTable table = table(cmd);
        String tmp = cmd.has("tmp") ? cmd.get("tmp").asText() : System.getProperty("java.io.tmpdir");
        timed(reply, () -> {
            Map<String, Object[]> buckets = new LinkedHashMap<>();
            for (Split s : table.newReadBuilder().newScan().plan().splits()) {
                org.apache.paimon.table.source.DataSplit d = (org.apache.paimon.table.source.DataSplit) s;
                buckets.put(d.partition().toString() + "/" + d.bucket() + "/" + java.util.Arrays.toString(d.partition().toBytes()),
                        new Object[]{d.partition(), d.bucket()});
            }
            BatchWriteBuilder builder = table.newBatchWriteBuilder();
            try (IOManager io = IOManager.create(tmp);
                 BatchTableWrite write = builder.newWrite();
                 BatchTableCommit commit = builder.newCommit()) {
                write.withIOManager(io);
                for (Object[] b : buckets.values()) write.compact((BinaryRow) b[0], (Integer) b[1], true);
                commit.commit(write.prepareCommit());
            }
            return null;
        });
    }

    static String version() throws Exception {
        for (String p : new String[]{"META-INF/maven/org.apache.paimon/paimon-bundle/pom.properties",
                "META-INF/maven/org.apache.paimon/paimon-core/pom.properties"}) {
            try (java.io.InputStream s = BenchDriver.class.getClassLoader().getResourceAsStream(p)) {
                if (s != null) {
                    java.util.Properties props = new java.util.Properties();
                    props.load(s);
                    return props.getProperty("version");
                }
            }
        }
        return "unknown";
    }
}
