/*
 * kdump's test driver: one run of Kafka's own log cleaner over a copy of a log dir, as a broker's
 * cleaner thread runs it (LogCleanerManager.grabFilthiestCompactedLog, Cleaner.doClean,
 * LogCleanerManager.doneCleaning), at a fixed clock. Compiled at test set-up against the
 * release's classpath (tests/realkafka); its answers are what kdump compact is compared with.
 *
 * java Cleaner LOG_DIR PARTITION_DIR NOW_MS HIGH_WATERMARK DEDUPE_BUFFER_SIZE THREADS FORCE [NAME=VALUE...]
 *
 * The partition's log is loaded as LogManager loads it (log start and recovery point from the log
 * dir's checkpoints; a clean shutdown when the log dir holds .kafka_cleanshutdown, as
 * LogManager.loadLogs decides: the producer state is then not rebuilt when there is no snapshot,
 * else it is replayed from the latest snapshot or the log start), its high watermark set as
 * Partition does. The
 * topic settings are the NAME=VALUE pairs (LogConfig); FORCE 1 cleans even a log the manager
 * would not pick (LogCleanerManager.cleanableOffsets, as grabFilthiestCompactedLog computes it).
 * Prints one line of "key value" pairs: picked, first_dirty, first_uncleanable, end_offset,
 * messages_read, bytes_read, messages_written, bytes_written.
 */
import java.io.File;
import java.lang.reflect.Method;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.util.KafkaScheduler;
import org.apache.kafka.storage.internals.checkpoint.OffsetCheckpointFile;
import org.apache.kafka.storage.internals.log.CleanerStats;
import org.apache.kafka.storage.internals.log.LogCleanerManager;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.LogToClean;
import org.apache.kafka.storage.internals.log.PreCleanStats;
import org.apache.kafka.storage.internals.log.ProducerStateManagerConfig;
import org.apache.kafka.storage.internals.log.SkimpyOffsetMap;
import org.apache.kafka.storage.internals.log.UnifiedLog;
import org.apache.kafka.storage.internals.utils.Throttler;
import org.apache.kafka.storage.log.metrics.BrokerTopicStats;

public class Cleaner {
    static final class FixedTime implements Time {
        final long now;
        FixedTime(long now) { this.now = now; }
        public long milliseconds() { return now; }
        public long nanoseconds() { return now * 1_000_000L; }
        public void sleep(long ms) { }
        public void waitObject(Object o, Supplier<Boolean> done, long deadline) { }
    }

    static Long entry(File logDir, String name, TopicPartition tp) throws Exception {
        File file = new File(logDir, name);
        if (!file.exists()) return null;
        return new OffsetCheckpointFile(file, null).read().get(tp);
    }

    static Object field(Object o, String name) throws Exception {
        java.lang.reflect.Field f = o.getClass().getDeclaredField(name);
        f.setAccessible(true);
        return f.get(o);
    }

    public static void main(String[] args) throws Exception {
        File logDir = new File(args[0]);
        File dir = new File(logDir, args[1]);
        long now = Long.parseLong(args[2]);
        long highWatermark = Long.parseLong(args[3]);
        long dedupe = Long.parseLong(args[4]);
        int threads = Integer.parseInt(args[5]);
        boolean force = args[6].equals("1");
        Properties props = new Properties();
        for (int i = 7; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            props.put(kv[0], kv[1]);
        }
        LogConfig config = new LogConfig(props);
        Time time = new FixedTime(now);
        TopicPartition tp = UnifiedLog.parseTopicPartitionName(dir);
        Long start = entry(logDir, "log-start-offset", tp);
        Long recovery = entry(logDir, "recovery-point-offset-checkpoint", tp);
        KafkaScheduler scheduler = new KafkaScheduler(1);
        scheduler.startup();
        LogDirFailureChannel failures = new LogDirFailureChannel(1);
        UnifiedLog log = UnifiedLog.create(dir, config, start == null ? 0L : start,
            recovery == null ? 0L : recovery, scheduler, new BrokerTopicStats(), time, 60000,
            new ProducerStateManagerConfig(86400000, false), 600000, failures,
            new File(logDir, ".kafka_cleanshutdown").exists(), Optional.empty());
        log.updateHighWatermark(highWatermark);
        ConcurrentHashMap<TopicPartition, UnifiedLog> logs = new ConcurrentHashMap<>();
        logs.put(tp, log);
        LogCleanerManager manager = new LogCleanerManager(List.of(logDir), logs, failures);
        Optional<LogToClean> picked = manager.grabFilthiestCompactedLog(time, new PreCleanStats());
        LogToClean cleanable;
        if (picked.isPresent()) {
            cleanable = picked.get();
        } else if (force) {
            Map<TopicPartition, Long> last = manager.allCleanerCheckpoints();
            Method offsets = LogCleanerManager.class.getDeclaredMethod(
                "cleanableOffsets", UnifiedLog.class, Optional.class, long.class);
            offsets.setAccessible(true);
            Object o = offsets.invoke(null, log, Optional.ofNullable(last.get(tp)), now);
            Method first = o.getClass().getDeclaredMethod("firstDirtyOffset");
            Method upper = o.getClass().getDeclaredMethod("firstUncleanableDirtyOffset");
            first.setAccessible(true);
            upper.setAccessible(true);
            cleanable = new LogToClean(log, (Long) first.invoke(o), (Long) upper.invoke(o), false);
        } else {
            System.out.println("picked 0");
            log.close();
            scheduler.shutdown();
            return;
        }
        int mapSize = (int) Math.min(dedupe / threads, Integer.MAX_VALUE);
        org.apache.kafka.storage.internals.log.Cleaner cleaner = new org.apache.kafka.storage.internals.log.Cleaner(
            0, new SkimpyOffsetMap(mapSize, "MD5"), 1024 * 1024 / threads / 2, config.maxMessageSize(),
            0.9, new Throttler(Double.MAX_VALUE, 300, "cleaner-io", "bytes", time), time, t -> { });
        Map.Entry<Long, CleanerStats> done = cleaner.doClean(cleanable, now);
        if (picked.isPresent()) {
            manager.doneCleaning(tp, logDir, done.getKey());
        } else {
            new OffsetCheckpointFile(new File(logDir, LogCleanerManager.OFFSET_CHECKPOINT_FILE), null)
                .write(Map.of(tp, done.getKey()));
        }
        CleanerStats stats = done.getValue();
        System.out.println("picked " + (picked.isPresent() ? 1 : 0)
            + " first_dirty " + cleanable.firstDirtyOffset()
            + " first_uncleanable " + cleanable.firstUncleanableOffset()
            + " end_offset " + done.getKey()
            + " messages_read " + field(stats, "messagesRead") + " bytes_read " + field(stats, "bytesRead")
            + " messages_written " + field(stats, "messagesWritten")
            + " bytes_written " + field(stats, "bytesWritten"));
        log.close();
        scheduler.shutdown();
    }
}
