// Java's own `new String(bytes, StandardCharsets.UTF_8)`, the decoding Kafka's StringDecoder and
// header keys use: each line of standard input is hex bytes; each line of output is the string's
// UTF-16 code units in hex (4 digits each), so no console encoding stands between the JDK and the
// test. Run with the single-file launcher: `java NewString.java < cases`.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;

public class NewString {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        StringBuilder out = new StringBuilder();
        String line;
        while ((line = in.readLine()) != null) {
            String s = new String(HexFormat.of().parseHex(line.trim()), StandardCharsets.UTF_8);
            for (int i = 0; i < s.length(); i++)
                out.append(String.format("%04x", (int) s.charAt(i)));
            out.append('\n');
        }
        System.out.print(out);
    }
}
