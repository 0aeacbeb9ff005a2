// Every config Kafka defines, with its type, one per line: "RESOURCE name TYPE". What
// kdump/kraft/safe_configs.py lists (the names whose type is not PASSWORD) comes from here.
//
//   java scripts/KafkaConfigNames.java   (Java 17's single-file launcher; the classpath of
//   Kafka 4.4.0's kafka_2.13, kafka-clients, kafka-server, kafka-storage, kafka-group-coordinator
//   and their dependencies, as Maven resolves org.apache.kafka:kafka_2.13:4.4.0)
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;

public class KafkaConfigNames {
    public static void main(String[] args) throws Exception {
        Map<String, ConfigDef> defs = new LinkedHashMap<>();
        defs.put("BROKER", (ConfigDef) Class.forName("kafka.server.KafkaConfig")
            .getMethod("configDef").invoke(null));
        defs.put("TOPIC", (ConfigDef) Class.forName("org.apache.kafka.storage.internals.log.LogConfig")
            .getMethod("configDefCopy").invoke(null));
        defs.put("GROUP", (ConfigDef) Class.forName("org.apache.kafka.coordinator.group.GroupConfig")
            .getField("CONFIG_DEF").get(null));
        defs.put("CLIENT_METRICS", (ConfigDef) Class.forName("org.apache.kafka.server.metrics.ClientMetricsConfigs")
            .getMethod("configDef").invoke(null));
        for (Map.Entry<String, ConfigDef> def : defs.entrySet())
            for (ConfigDef.ConfigKey key : def.getValue().configKeys().values())
                System.out.println(def.getKey() + " " + key.name + " " + key.type);
    }
}
