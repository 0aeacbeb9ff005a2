import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Writes what a test asks for with Kafka's own Java producer.
 *
 * <p>Arguments: BOOTSTRAP JOB... where each JOB is a JSON object (tests/realkafka/clients.py
 * documents the fields). After each job one JSON line on stdout: the records sent and acknowledged,
 * and per partition the first and last acknowledged offset. With "records": -1 the job runs until
 * the process is killed, printing "ack PARTITION OFFSET" for each acknowledged record as it comes.
 */
public final class Produce {
    private static final ObjectMapper JSON = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        for (int i = 1; i < args.length; i++) {
            run(args[0], JSON.readTree(args[i]));
        }
    }

    private static void run(String bootstrap, JsonNode job) throws Exception {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, job.path("compression").asText("none"));
        props.put(ProducerConfig.BATCH_SIZE_CONFIG, job.path("batch_size").asText("16384"));
        props.put(ProducerConfig.LINGER_MS_CONFIG, job.path("linger_ms").asText("5"));
        props.put(ProducerConfig.ACKS_CONFIG, job.path("acks").asText("all"));
        props.put(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, "1048576");
        boolean idempotent = job.path("idempotent").asBoolean(false);
        String txnId = job.path("transactional_id").asText(null);
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, String.valueOf(idempotent || txnId != null));
        if (!idempotent && txnId == null) {
            props.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "1");
        }
        if (txnId != null) {
            props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
        }

        String topic = job.get("topic").asText();
        Integer partition = job.has("partition") ? job.get("partition").asInt() : null;
        long records = job.path("records").asLong(100);
        int valueBytes = job.path("value_bytes").asInt(100);
        int keys = job.path("keys").asInt(0);
        int tombstoneEvery = job.path("tombstone_every").asInt(0);
        int headers = job.path("headers").asInt(0);
        boolean binary = job.path("binary").asBoolean(false);
        boolean printAcks = records < 0 || job.path("print_acks").asBoolean(false);
        int txnRecords = job.path("transaction_records").asInt(10);
        int abortEvery = job.path("abort_every").asInt(0);
        boolean openAtEnd = job.path("open_at_end").asBoolean(false);
        Long tsStart = job.has("timestamp_start") ? job.get("timestamp_start").asLong() : null;
        long tsStep = job.path("timestamp_step").asLong(1);
        Random random = new Random(job.path("seed").asLong(42));

        Map<Integer, long[]> offsets = new TreeMap<>();
        long[] acked = {0};
        AtomicReference<Exception> failure = new AtomicReference<>();
        long sent = 0;
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            if (txnId != null) {
                producer.initTransactions();
            }
            long txn = 0;
            for (long i = 0; records < 0 || i < records; i++) {
                if (failure.get() != null) {
                    throw failure.get();
                }
                boolean txnStart = txnId != null && i % txnRecords == 0;
                if (txnStart) {
                    producer.beginTransaction();
                    txn++;
                }
                byte[] key = keys > 0 ? ("key-" + (i % keys)).getBytes(StandardCharsets.UTF_8) : null;
                byte[] value = tombstoneEvery > 0 && (i + 1) % tombstoneEvery == 0 ? null : value(i, valueBytes, binary, random);
                List<Header> hs = new java.util.ArrayList<>();
                for (int h = 0; h < headers; h++) {
                    hs.add(new RecordHeader("h" + h, ("v" + i).getBytes(StandardCharsets.UTF_8)));
                }
                Long ts = tsStart == null ? null : tsStart + i * tsStep;
                producer.send(new ProducerRecord<>(topic, partition, ts, key, value, hs), (md, e) -> {
                    if (e != null) {
                        failure.compareAndSet(null, e);
                        return;
                    }
                    synchronized (offsets) {
                        acked[0]++;
                        long[] range = offsets.computeIfAbsent(md.partition(), p -> new long[] {md.offset(), md.offset()});
                        range[0] = Math.min(range[0], md.offset());
                        range[1] = Math.max(range[1], md.offset());
                        if (printAcks) {
                            System.out.println("ack " + md.partition() + " " + md.offset());
                            System.out.flush();
                        }
                    }
                });
                sent++;
                boolean txnEnd = txnId != null && ((i + 1) % txnRecords == 0 || i + 1 == records);
                if (txnEnd) {
                    if (openAtEnd && i + 1 == records) {
                        producer.flush();
                        summary(topic, sent, acked, offsets, txn);
                        // a producer that dies inside its transaction: no marker is ever written
                        Runtime.getRuntime().halt(0);
                    }
                    if (abortEvery > 0 && txn % abortEvery == 0) {
                        producer.flush();
                        producer.abortTransaction();
                    } else {
                        producer.commitTransaction();
                    }
                }
            }
            producer.flush();
            if (failure.get() != null) {
                throw failure.get();
            }
            summary(topic, sent, acked, offsets, txn);
        }
    }

    private static byte[] value(long i, int size, boolean binary, Random random) {
        byte[] value = new byte[size];
        if (binary) {
            random.nextBytes(value);
            return value;
        }
        byte[] text = ("record " + i + " of a test; ").getBytes(StandardCharsets.UTF_8);
        for (int j = 0; j < size; j++) {
            value[j] = text[j % text.length];
        }
        return value;
    }

    private static void summary(String topic, long sent, long[] acked, Map<Integer, long[]> offsets, long txns) throws Exception {
        ObjectNode out = JSON.createObjectNode();
        out.put("topic", topic);
        out.put("sent", sent);
        out.put("transactions", txns);
        synchronized (offsets) {
            out.put("acked", acked[0]);
            ObjectNode ranges = out.putObject("offsets");
            for (Map.Entry<Integer, long[]> e : offsets.entrySet()) {
                ranges.putArray(String.valueOf(e.getKey())).add(e.getValue()[0]).add(e.getValue()[1]);
            }
        }
        System.out.println(JSON.writeValueAsString(out));
        System.out.flush();
    }
}
