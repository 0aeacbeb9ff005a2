import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * A share group member (KIP-932) reading a topic with Kafka's own KafkaShareConsumer, so the share
 * coordinator writes its state to __share_group_state.
 *
 * <p>Arguments: BOOTSTRAP GROUP TOPIC RECORDS. Sets the group to start at the earliest offset,
 * then reads until it has acknowledged RECORDS records (or
 * two minutes pass), commits, closes; prints the count.
 */
public final class ShareConsume {
    public static void main(String[] args) throws Exception {
        // a new share group starts at the latest offset: this one reads what is there
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", args[0]))) {
            ConfigResource group = new ConfigResource(ConfigResource.Type.GROUP, args[1]);
            AlterConfigOp earliest = new AlterConfigOp(
                new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET);
            admin.incrementalAlterConfigs(Map.of(group, List.of(earliest))).all().get();
        }
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, args[1]);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        long wanted = Long.parseLong(args[3]);
        long read = 0;
        long deadline = System.currentTimeMillis() + 120_000;
        try (KafkaShareConsumer<byte[], byte[]> consumer = new KafkaShareConsumer<>(props)) {
            consumer.subscribe(List.of(args[2]));
            while (read < wanted && System.currentTimeMillis() < deadline) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(500));
                read += records.count();
                consumer.commitSync();
            }
        }
        System.out.println(read);
    }

    private ShareConsume() {}
}
