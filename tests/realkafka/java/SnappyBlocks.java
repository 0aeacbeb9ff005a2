/*
 * kdump's test driver: each file of a directory compressed as Kafka's SnappyOutputStream
 * compresses a block (snappy-java's Snappy.rawCompress, the Google snappy it embeds), written
 * beside it as NAME.snappy; prints the native library's version.
 *
 * java SnappyBlocks DIR
 */
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.xerial.snappy.Snappy;

public class SnappyBlocks {
    public static void main(String[] args) throws Exception {
        List<Path> inputs;
        try (Stream<Path> files = Files.list(Paths.get(args[0]))) {
            inputs = files.filter(p -> !p.toString().endsWith(".snappy")).collect(Collectors.toList());
        }
        for (Path p : inputs) {
            byte[] in = Files.readAllBytes(p);
            byte[] out = new byte[Snappy.maxCompressedLength(in.length)];
            int n = Snappy.rawCompress(in, 0, in.length, out, 0);
            Files.write(Paths.get(p + ".snappy"), java.util.Arrays.copyOf(out, n));
        }
        System.out.println(Snappy.getNativeLibraryVersion());
    }
}
