import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.FileInputStream;
import java.io.InputStream;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.util.KafkaScheduler;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.LogSegment;

/**
 * Kafka's LogManager loading a log dir, with no broker around it: what a broker's startup does to
 * the files of its log dirs (LogManager.loadLogs: LogLoader's settling of leftover files, its
 * recovery after an unclean stop, the rebuilt indexes, the producer state snapshots), and the
 * facts it then holds for each log.
 *
 * <p>Arguments: SERVER_PROPERTIES TOPIC_CONFIGS_JSON. The properties are a broker's (log.dirs names
 * the copy to load); the JSON maps each topic to the configs it overrides (what the metadata
 * image would give the broker's ConfigRepository). Prints one JSON object: {"logs": [...]}, one
 * entry per loaded log; {"error": "..."} if the load threw (a broker stops then). Then the JVM halts: no clean shutdown, no checkpoint written, so the files
 * are as the load left them. The log lines go where log4j2.properties sends them.
 *
 * <p>LogManager moved from the broker's Scala (4.0) to the storage module (4.4), so it is found and
 * called by reflection, by parameter types: the same source runs against either release.
 */
public final class LoadLogs {
    private static final ObjectMapper JSON = new ObjectMapper();

    public static void main(String[] args) throws Throwable {
        Properties props = new Properties();
        try (InputStream in = new FileInputStream(args[0])) {
            props.load(in);
        }
        // nothing but the load: no cleaner thread rewriting compacted logs meanwhile
        props.put("log.cleaner.enable", "false");
        JsonNode topics = JSON.readTree(args[1]);

        Class<?> kafkaConfig = Class.forName("kafka.server.KafkaConfig");
        Object config = kafkaConfig.getMethod("fromProps", Properties.class).invoke(null, props);
        KafkaScheduler scheduler = new KafkaScheduler(1);
        scheduler.startup();

        Method apply = null;
        for (Method m : Class.forName("kafka.log.LogManager").getMethods()) {
            if (m.getName().equals("apply") && Modifier.isStatic(m.getModifiers())) {
                apply = m;
            }
        }
        if (apply == null) {
            throw new IllegalStateException("no kafka.log.LogManager.apply in this release");
        }
        Class<?>[] types = apply.getParameterTypes();
        Object[] values = new Object[types.length];
        for (int i = 0; i < types.length; i++) {
            values[i] = argument(types[i], config, scheduler, topics);
        }
        Object manager = apply.invoke(null, values);

        Set<String> names = new HashSet<>();
        topics.fieldNames().forEachRemaining(names::add);
        Method startup = null;
        for (Method m : manager.getClass().getMethods()) {
            if (m.getName().equals("startup") && (startup == null || m.getParameterCount() < startup.getParameterCount())) {
                startup = m;
            }
        }
        try {
            if (startup.getParameterCount() == 1) {
                startup.invoke(manager, names);
            } else {
                startup.invoke(manager, scalaSet(names), notStray(startup.getParameterTypes()[1]));
            }
        } catch (java.lang.reflect.InvocationTargetException e) {
            // the load failed, as the broker's would (it then stops): what it threw is the answer
            ObjectNode out = JSON.createObjectNode();
            Throwable cause = e.getCause();
            while (cause.getCause() != null && !(cause instanceof org.apache.kafka.common.KafkaException)) {
                cause = cause.getCause();
            }
            out.put("error", cause.getClass().getName() + ": " + cause.getMessage());
            System.out.println(JSON.writeValueAsString(out));
            System.out.flush();
            Runtime.getRuntime().halt(0);
        }

        ArrayNode logs = JSON.createArrayNode();
        List<Object> all = new ArrayList<>();
        for (Object log : javaIterable(manager.getClass().getMethod("allLogs").invoke(manager))) {
            all.add(log);
        }
        all.sort(Comparator.comparing(l -> String.valueOf(call(l, "topicPartition"))));
        for (Object log : all) {
            logs.add(facts(log));
        }
        ObjectNode out = JSON.createObjectNode();
        out.set("logs", logs);
        // the load's asynchronous writes (the leader epoch checkpoint's flush) done, the delayed
        // ones (deleting .deleted files a minute later) dropped: KafkaScheduler's shutdown
        scheduler.shutdown();
        System.out.println(JSON.writeValueAsString(out));
        System.out.flush();
        Runtime.getRuntime().halt(0);
    }

    private static Object argument(Class<?> type, Object config, KafkaScheduler scheduler, JsonNode topics) throws Exception {
        String name = type.getName();
        if (type.isInstance(config)) {
            return config;
        }
        if (type == boolean.class) {
            return true; // 4.0's keepPartitionMetadataFile: a KRaft broker keeps it
        }
        if (name.equals("scala.collection.immutable.Seq") || name.equals("scala.collection.Seq")) {
            return Class.forName("scala.collection.immutable.Nil$").getField("MODULE$").get(null);
        }
        if (type == java.util.Set.class) {
            return Set.of();
        }
        if (name.endsWith(".ConfigRepository")) {
            return configRepository(type, topics);
        }
        if (type.isInstance(scheduler)) {
            return scheduler;
        }
        if (type == Time.class) {
            return Time.SYSTEM;
        }
        if (type == LogDirFailureChannel.class) {
            return new LogDirFailureChannel(1);
        }
        if (name.endsWith(".BrokerTopicStats")) {
            try {
                return type.getConstructor(boolean.class).newInstance(false);
            } catch (NoSuchMethodException e) {
                return type.getConstructor().newInstance();
            }
        }
        throw new IllegalStateException("LogManager.apply takes a " + name + ": not known here");
    }

    /** A ConfigRepository answering each topic's overrides from the JSON, nothing for others. */
    private static Object configRepository(Class<?> type, JsonNode topics) {
        InvocationHandler handler = (proxy, method, args) -> {
            if (method.getName().equals("config")) {
                ConfigResource resource = (ConfigResource) args[0];
                Properties p = new Properties();
                JsonNode found = topics.path(resource.name());
                if (resource.type() == ConfigResource.Type.TOPIC && found.isObject()) {
                    found.fields().forEachRemaining(e -> p.put(e.getKey(), e.getValue().asText()));
                }
                return p;
            }
            if (method.isDefault()) {
                return InvocationHandler.invokeDefault(proxy, method, args);
            }
            if (method.getName().equals("toString")) {
                return "LoadLogs.ConfigRepository";
            }
            if (method.getName().equals("hashCode")) {
                return System.identityHashCode(proxy);
            }
            if (method.getName().equals("equals")) {
                return proxy == args[0];
            }
            throw new UnsupportedOperationException(method.toString());
        };
        return Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] {type}, handler);
    }

    /** A scala.Function1 saying of every log that it is not a stray (4.0's startup). */
    private static Object notStray(Class<?> function1) {
        InvocationHandler handler = (proxy, method, args) -> {
            if (method.getName().equals("apply")) {
                return Boolean.FALSE;
            }
            if (method.isDefault()) {
                return InvocationHandler.invokeDefault(proxy, method, args);
            }
            return method.getName().equals("toString") ? "notStray" : null;
        };
        return Proxy.newProxyInstance(function1.getClassLoader(), new Class<?>[] {function1}, handler);
    }

    private static Object scalaSet(Set<String> names) throws Exception {
        Class<?> converters = Class.forName("scala.jdk.javaapi.CollectionConverters");
        return converters.getMethod("asScala", java.util.Set.class).invoke(null, names);
    }

    @SuppressWarnings("unchecked")
    private static Iterable<Object> javaIterable(Object collection) throws Exception {
        if (collection instanceof Iterable) {
            return (Iterable<Object>) collection;
        }
        Class<?> converters = Class.forName("scala.jdk.javaapi.CollectionConverters");
        Class<?> iterable = Class.forName("scala.collection.Iterable");
        return (Iterable<Object>) converters.getMethod("asJava", iterable).invoke(null, collection);
    }

    private static Object call(Object target, String method) {
        try {
            return target.getClass().getMethod(method).invoke(target);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(method, e);
        }
    }

    private static ObjectNode facts(Object log) {
        ObjectNode out = JSON.createObjectNode();
        org.apache.kafka.common.TopicPartition tp = (org.apache.kafka.common.TopicPartition) call(log, "topicPartition");
        out.put("topic", tp.topic());
        out.put("partition", tp.partition());
        out.put("dir", String.valueOf(call(log, "dir")));
        for (String fact : new String[] {"logStartOffset", "logEndOffset", "recoveryPoint", "highWatermark", "lastStableOffset", "size"}) {
            out.put(snake(fact), (Long) call(log, fact));
        }
        out.put("segments", (Integer) call(log, "numberOfSegments"));
        out.put("active_segment", ((LogSegment) call(log, "activeSegment")).baseOffset());
        java.util.OptionalLong snapshot = (java.util.OptionalLong) call(log, "latestProducerSnapshotOffset");
        if (snapshot.isPresent()) {
            out.put("latest_producer_snapshot", snapshot.getAsLong());
        } else {
            out.putNull("latest_producer_snapshot");
        }
        ArrayNode segments = out.putArray("segment_list");
        for (Object s : (Collection<?>) call(log, "logSegments")) {
            LogSegment segment = (LogSegment) s;
            segments.addArray().add(segment.baseOffset()).add(segment.size());
        }
        return out;
    }

    private static String snake(String camel) {
        return camel.replaceAll("([A-Z])", "_$1").toLowerCase();
    }

    private LoadLogs() {}
}
